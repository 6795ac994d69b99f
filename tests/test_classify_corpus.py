"""Every real labelled log against its label: the shared corpus and the tuned part of ours.

The label's ``first_exception`` must be contained in the reported root line (or in the
wrapper line reported as its context: pydantic's header, ``RayTaskError(…)``), the failed
stage and ``oom_root_cause`` must match; a ``none`` log has no exception. One test case per
log of ``../shared/corpus`` and of the TUNED part of ``tests/data/corpus``
(``tests/support/corpus.py``). The held-out fifth is checked only in aggregate, against
issue 13's bar, and its failure message holds counts only: never a file name or a line.
"""

from __future__ import annotations

import pytest

from k3tui.classify import Classifier, classify_text
from k3tui.events import ExceptionFound, RunClassified, StageReached
from tests.support.corpus import SHARED_CORPUS, Case, cases, held_out_cases, tuned_cases

SHARED = cases(SHARED_CORPUS)
TUNED = tuned_cases()

KNOWN_MISSES = {
    "vllm-issues/8003.log": "the reporter put the error line (`limit_mm_per_prompt` is only supported for multimodal models) first, above the start-up lines that would place it: nothing names its layer (engine by default); the label config",
    "vllm-issues/7811.log": "stage right; an out-of-memory line after the root reads as its consequence (oom false); the label has no OOM (null)",
    "vllm-issues/7957.log": "stage and root right; 'No available memory for the cache blocks' is no out-of-memory line to the classifier (oom null); the label reads it as the root cause (true)",
    "vllm-issues/7809.log": "vllm-ascend's assertion that MLA with graph mode allows only some queries per KV head, raised as the model is built: its frames say weights; the label config (an option combination refused)",
    "vllm-issues/7810.log": "the undefined symbol of vllm_ascend_C is found by the author's own import test below; the server's root is 'camem allocator is not available' in the model's load (weights); the label container",
    "vllm-issues/7812.log": "stage right; Gloo's 'connectFullMesh failed … Connection refused' (an earlier problem the author fixed) is the root, the label the handshake's 'Did not receive response from front-end process within 5 minutes'",
    "vllm-issues/7813.log": "a CUDA out-of-memory with no stack or marker: the engine's by its type (most such roots are its profiling's); the label runtime (verl's weight sync into a serving engine)",
    "vllm-issues/7814.log": "Ray's autoscaler finding no node for the GPUs: the device's (session 28's rule); the label engine (the placement group of a multi-node launch)",
    "vllm-issues/7815.log": "Mooncake's glog 'Transfer failed for task0' with nothing that names its layer: the engine's set-up by default; the label runtime (a KV transfer while serving)",
    "vllm-issues/7817.log": "stage right; NIXL's 'NIXL_ERR_BACKEND' is the root, the label UCX's ibv_create_ah error line before it",
    "vllm-issues/7821.log": "Ray's WARNING that the GPUs asked for exceed the placement group's, then the paste ends: a warning is no root form (label config)",
    "vllm-issues/7832.log": "a pydantic TypeError inside FastAPI's routing: its frames say the image's packages (container); the label api",
    "vllm-issues/7838.log": "ZMQ's 'Address already in use' is the engine's own IPC by its message rule; the label api (an API server's ZMQ channel)",
    "vllm-issues/7844.log": "HarmonyError reprs collected from responses: read as a failure's root; the label none (the server answered each request)",
    "vllm-issues/7864.log": "torch.library refusing a custom op's signature (infer_schema: unsupported type list[int]) at import, the torch too old for vLLM: nothing names its layer (engine by default); the label container",
    "vllm-issues/7865.log": "a write-up quoting the KV-cache check's words without the ValueError: no root form (label engine)",
    "vllm-issues/7869.log": "a CUDA out-of-memory with no stack or marker: the engine's by its type; the label runtime (an RL judge's MoE workspace under load)",
    "vllm-issues/7894.log": "'Failed to infer device type' is the device's; the label container (a GPU wheel on a CPU-only host); the write-up's heading quoting it is taken as the root",
    "vllm-issues/7897.log": "stage right; 'No platform detected' is the root, the label the CPU worker's JSONDecodeError that follows it",
    "vllm-issues/7900.log": "stage right; the NameError of a guarded import is the root, the label llm-on-ray's warning before it ('VLLM package is not installed')",
    "vllm-issues/7902.log": "'Illegal instruction' is the device's (the CPU lacks an instruction the build uses); the label container (the wrong build for this CPU)",
    "vllm-issues/7906.log": "pip's dependency-conflict note ('vllm 0.8.1 requires torch==2.6.0, but you have …'): the install went on, no root form; the label container",
    "vllm-issues/7908.log": "stage right; 'No platform detected' is the root, the label the probe's reason before it (NVML Shared Library Not Found); 4740's and 4869's like labels want the former",
    "vllm-issues/7911.log": "stage right; the worklog's heading quoting the undefined symbol is taken as the root, the label the symbol's own line below it",
    "vllm-issues/7914.log": "pip's verbose 'Skipping link: none of the wheel's tags … are compatible' notes, the failure's own line cut: no root form (label container)",
    "vllm-issues/7923.log": "a worker's shape mismatch with nothing that names its layer: the engine's set-up by default; the label runtime (a multimodal request)",
    "vllm-issues/7933.log": "'_OpNamespace' 'vllm' object has no attribute 'unified_attention' read as the image's (container); the label runtime (the first request on ppc64le)",
    "vllm-issues/7935.log": "'default chat template is no longer allowed' is one request's refusal (the server survives: 7 tuned logs labelled none); the label config",
    "vllm-issues/7959.log": "verl's FileNotFoundError for its own checkpoint, the vLLM engine dying after it: read as a failure; the label none (the trainer's, not vLLM's)",
    "vllm-issues/7960.log": "verl's RayTaskError over a wandb validation error: read as a failure; the label none (the trainer's, not vLLM's)",
    "vllm-issues/7964.log": "MindSpeed-RL's 'Can't split train tp size 4 to infer tp size 8': nothing names its layer; the label config",
    "vllm-issues/7965.log": "torch_npu lacking '_npu_rotary_embedding' inside the profiling run: its frames say the engine; the label container (torch_npu too old)",
    "vllm-issues/7969.log": "'Could not run vllm::lora_expand with arguments from the CUDA backend' on ROCm after the weights: the markers say the engine; the label device",
    "vllm-issues/7604.log": "a native 'terminate called after throwing … c10::AcceleratorError' line then torch's 'what(): CUDA error: an illegal memory access': stage right; the terminate line is the root, the label the what() line (3053's like label wants the terminate line)",
    "vllm-issues/7608.log": "stage right; Ascend's 'The Inner error is reported as above' wrapper taken as the root, the label the allocation failure inside it ('Memory_Allocation_Failure(EL0004)')",
    "vllm-issues/7617.log": "stage right; the label's root ('RuntimeError: cancelled') is the consequence the write-up quotes; the classifier reports the engine-dead line of the same stack",
    "vllm-issues/7640.log": "a GGUF architecture that vLLM does not support ('GGUF model with architecture qwen3vlmoe is not supported yet'): the message rule says weights (the model's file), the label config (unsure)",
    "vllm-issues/7645.log": "'_OpNamespace' '_C' object has no attribute 'gptq_marlin_repack' (the op missing from this build) read as the container's; the label says weights (an FP8 checkpoint on Kunlun, unsure)",
    "vllm-issues/7662.log": "a worker's traceback whose exception line is cut after the logger's prefix: the root is that empty line, the label the CUDA error name quoted below it (stage right)",
    "vllm-issues/7664.log": "oneCCL's 'CCL_ERROR| ze_fd_manager.cpp:144 init_device_fds' line has no root form: the consequence 'Engine core initialization failed' is the root (engine); the label device (/dev/dri not mounted)",
    "vllm-issues/7671.log": "HIP's 'invalid kernel file' inside NCCL's set-up: its frames say the engine; the label device (no kernel for the GPU, unsure)",
    "vllm-issues/7672.log": "NCCL's 'Duplicate GPU detected' warning: the DistBackendError after it is read as the engine's NCCL set-up; the label device (two ranks on one GPU); 2019's like line is labelled runtime",
    "vllm-issues/7674.log": "the paste lost the 'R' of 'RuntimeError: CUDA error: out of memory' ('untimeError'): no root form is left (label engine)",
    "vllm-issues/7691.log": "stage right; the Inductor line that names PTXASError is the root, the label the 'ptxas fatal' detail line printed by another process prefix after it (1908's like label wants the Inductor line)",
    "vllm-issues/7695.log": "'ptxas fatal : Ptx assembly aborted due to errors' is the device's (ptxas refusing this GPU's PTX, as 2394's like line is labelled); the label says engine (torch.compile at start-up)",
    "vllm-issues/7724.log": "distilabel's logger wrapped vLLM's 'The number of required GPUs exceeds …' across lines: the fragment the label quotes carries no root form (label config)",
    "vllm-issues/7725.log": "'Unsupported connector type: LMCacheConnectorV1' with nothing that names its layer: the engine's set-up by default; the label config (the connector named on the command line)",
    "vllm-issues/7726.log": "'Model architectures [...] failed to be inspected' under pydantic's 'Value error': the config's; the label container (a build that lacks the architecture's packages, unsure)",
    "vllm-issues/7727.log": "the model registry's inspection subprocess failing on native Windows (CalledProcessError): the engine's set-up by default; the label container (an unsupported platform's install)",
    "vllm-issues/7772.log": "stage right; the compile's BackendCompilerFailed wrapper is the root, the label the device-memory error inside it on the next lines ('SYS_EBUSY: Lack of device memory')",
    "vllm-issues/7784.log": "stage right; 'No platform detected' is the root, the label the version-inspection warning before it ('The vLLM package was not found')",
    "vllm-issues/7786.log": "XPU's 'level_zero backend failed with error: 20' with nothing that names its layer: the excerpt's words are a start-up's ('loads the model'), so the engine; the label runtime (device lost on the first request)",
    "vllm-issues/7791.log": "a third-party check script's 'FAIL: vllm._custom_ops: No module named …' line: no root form (label container)",
    "vllm-issues/7792.log": "stage right; the DEBUG 'No platform detected' line is the root, the label the probe's reason before it ('CUDA platform is not available because no GPU is found.')",
    "vllm-issues/7577.log": "only docker's warnings: the image's platform (linux/amd64) does not match the host's (linux/arm64/v8); a warning the run may survive (an emulated start) is no root form, read as healthy (label container)",
    "vllm-issues/7511.log": "a pytest run's Buildkite lines: Ray's 'Unhandled error' row with a P2P-disabled warning glued to pytest's SKIPPED; no root form (label device, unsure: a server would survive the warning)",
    "vllm-issues/7541.log": "torch.compile's autotuning failing with '[Errno 122] Disk quota exceeded' on its cache: the errno's message rule says weights (a model cache's quota, as most such lines are); the label says engine (the compile)",
    "vllm-issues/7550.log": "a Slurm job cancelled while the weights loaded: no line of its own, the log stops (label weights, null root, unsure: the file alone cannot be told from a cut log)",
    "vllm-issues/7574.log": "stage right; docker's hook report is taken as the root, the label the NVIDIA hook's own words on the next line ('invoking the NVIDIA Container Runtime Hook directly … is not supported'), which carry no root form",
    "vllm-issues/7426.log": "a WARNING 'Failed to import from vllm._C: ImportError(libnuma.so.1 …)' and nothing after it: the root a warning alone can be (the issue's own form), the container's; the label reads it as survived (none) on a CPU build",
    "vllm-issues/7461.log": "NCCL's 'cannot be captured in a graph' warning (driver or runtime too old for it) read by its frames as the engine's graph capture; the label says device (unsure); 2344's like line is labelled container",
    "vllm-issues/7492.log": "the Harmony parser's error logged by the front end for one request's output: read as that request's failure (a root, as the rule for output errors says); the label reads the server as having survived it (none)",
    "vllm-issues/7495.log": "stage right; the root taken is the engine core's 'encountered a fatal error', the label the Mooncake store's own failure line before it ('Failed to get 6722 keys'), which carries no exception",
    "vllm-issues/7502.log": "ROCm's HSA runtime aborting a queue (HSA_STATUS_ERROR_EXCEPTION) with nothing naming a layer: the engine's set-up by default; the label says runtime (an async-scheduling test's requests)",
    "vllm-issues/7302.log": "a CUDA out-of-memory with no frame or marker of its own (the reporter condensed it): the exception type's reading is the engine's set-up; the thread says it came under long-context prefill while serving",
    "vllm-issues/7305.log": "a request stuck while serving (stats lines with 'Running: 1 reqs' and 0.0 tokens/s): no failure line and no [hang] needle, read as healthy (label runtime, null root)",
    "vllm-issues/7314.log": "stage right (the shared-memory wait at the end: a hang while serving); the label names the wait line as the root, the hang verdict names none",
    "vllm-issues/7333.log": "the network root is only on huggingface_hub's WARNING retry lines ('Max retries exceeded … config.json'), which the server may survive; the final exception is not in the excerpt",
    "vllm-issues/7340.log": "'GGUF quantization hasn't supported tensor parallelism yet' read by its type as the config's refusal; the label says weights (the checkpoint's format, config defensible, unsure)",
    "vllm-issues/7341.log": "'Prequant BitsAndBytes models with tensor parallelism is not supported' with nothing naming a layer: the engine's set-up by default; the label says weights (config defensible, unsure)",
    "vllm-issues/7346.log": "the OSError's message runs onto the next line (a redacted path broke it): the root line read is 'OSError: /u01/xxx', its 'does not appear to have a file named' on the next line",
    "vllm-issues/7347.log": "'MiniCPMV only supports versions …' raised in a worker with nothing naming a layer: the engine's set-up by default; the label says config (the model variant, weights defensible)",
    "vllm-issues/7364.log": "one Ray placement-group wait line then the reporter's 'ray status' block: one wait is no hang (a slow cluster prints it too); the thread says it never formed",
    "vllm-issues/7380.log": "two placement-group waits, then Slurm cancelling the step: the cancel is taken as the root; the label says the waits (the device's hang that made the job run out)",
    "vllm-issues/7385.log": "'Tensor parallel size (16) cannot be larger than the number of available GPUs (8)' read as the device's (GPUs missing); the label says config (the TP choice); 7386's like message is labelled device",
    "vllm-issues/7392.log": "stage: the engine core's relay 'Worker failed with error' with nothing naming a layer is the engine's set-up by default; the label's root is the worker's ValueError quoted inside that relay ('type fp8e4nv not supported in this architecture': device)",
    "vllm-issues/7411.log": "a paste that starts inside a message (its head cut mid-line): the traceback's header is taken, the label names the fragment of the size-mismatch message",
    "vllm-cpu-faults/dkr-memory-1g.log": "a container OOM-killed whole under --memory 1g at start-up: the log stops at the engine's OpenMP binding with no line (OOMKilled only in docker inspect); no root, read as healthy (label engine, null root, unsure)",
    "vllm-cpu-faults/dkr-restart-on-failure-oom-logs-t.log": "the same OOM kill of the whole container, three attempts under --restart on-failure:2 in docker logs -t, none with a line of its own (label engine, null root, unsure)",
    "vllm-cpu-faults/dkr-memory-2g-logs.log": "stage and root right; the KV cache's memory check refusing under the container's 2g (a check, no allocation failed) is not read as an OOM, the label says oom_root_cause true (unsure)",
    "vllm-cpu-faults/dkr-kill-at-load.log": "docker kill (SIGKILL of the whole container) while the weights load: no line, the foreground docker run just ends (exit 137 only in the sidecar) (label weights, null root, unsure)",
    "vllm-cpu-faults/dkr-kill-inflight.log": "docker kill during a long request: no line, the log ends after the request's stats (label runtime, null root, unsure)",
    "vllm-cpu-faults/v085-kill9-engine-at-engine-init.log": "V0's engine process SIGKILLed at 'Initializing a V0 LLM engine': a silent kill placed where the start-up was last seen (device); the label says engine (the engine's construction, unsure)",
    "vllm-cpu-faults/v085-kill9-api-at-load.log": "V0's API server SIGKILLed while the engine process loads the weights: no line, the log stops (label weights, null root, unsure)",
    "vllm-cpu-faults/v085-kill9-api-inflight.log": "V0's API server SIGKILLed during a request: no line, the log stops (label runtime, null root)",
    "vllm-cpu-faults/v085-sigterm-at-engine-init.log": "V0's API server turning the operator's SIGTERM during start-up into 'KeyboardInterrupt: terminated': read as a stop (none); the label says engine with that line as the root (as sigint-at-engine-init, unsure)",
    "vllm-cpu-faults/v010-env-use-v1-0.log": "VLLM_USE_V1=0 on vLLM 0.10.1.1: the CPU platform's attention selection raises 'CPU backend only supports V1.', placed by its frames (the engine's attention back-end); the label says config (the environment's choice) while the tuned excerpts 1429 and 1432, the same message, say engine",
    "vllm-cpu-faults/slm-background-no-wait.log": "a job whose script ends with the server started in the background: Slurm kills it mid-start-up with no line saying so; no root (label config, null root, unsure)",
    "vllm-cpu-faults/slm-chdir-missing.log": "root right (slurmstepd's 'couldn't chdir to …: going to /tmp instead'); the label's weights comes from what followed (a relative model path read as a hub id), the chdir line names no layer: the default, engine (label unsure)",
    "vllm-cpu-faults/v011-kill9-engine-at-engine-init.log": "vLLM 0.11's engine core killed at its first line: 'Failed core proc(s): {}' does not say it was a kill; markers say device (label engine, unsure)",
    "vllm-cpu-faults/v011-kill9-api-at-load.log": "vLLM 0.11's API server SIGKILLed at load: nothing printed after it, no root (label weights, null root)",
    "vllm-cpu-faults/v011-kill9-api-inflight.log": "vLLM 0.11's API server SIGKILLed in flight: the log just ends after the request lines, no root (label runtime, null root)",
    "vllm-cpu-faults/v011-kv-blocks-override-4-long.log": "a request that never fits a 4-block KV cache waits forever ('Waiting: 1 reqs'): no hang wording the classifier knows, no root (label runtime, null root, unsure)",
    "vllm-issues/5450.log": "uvloop's 'this event loop is already running' when the API server starts, nothing naming the front end: assumed serving (label api)",
    "vllm-issues/5452.log": "Xinference's 500 quoting 'AsyncEngineArgs.__init__() got an unexpected keyword argument' in Chinese prose, no exception type: no root (label config)",
    "vllm-issues/5501.log": "a native 'terminate called' right after Neuron's 'Done Sharding weights' (no marker the classifier knows): read by the crash's type (label weights)",
    "vllm-issues/5351.log": "CANN's 'call aclnnPromptFlashAttentionV3 failed' detail line under the generic 'OPS call acl api failed' ERROR: the generic line is taken; nothing names the 310P's missing kernel as the device",
    "vllm-issues/5352.log": "a two-node serve's EngineCore TimeoutError while serving: its frames read the engine's set-up (label runtime)",
    "vllm-issues/5302.log": "a chained timeout: Python's 'TimeoutError: The read operation timed out' is taken; the label takes urllib3's ReadTimeoutError raised while handling it",
    "vllm-issues/5304.log": "the model inspection subprocess SIGTERMed by the job's process group: its 'Error raised in subprocess' is taken (label none: a stop)",
    "vllm-issues/5305.log": "NumPy's 'compiled using NumPy 1.x cannot be run in NumPy 2.x' traceback, survived (vLLM starts and serves): taken as the container's root (label none)",
    "vllm-issues/5311.log": "a test client's 'API test failed with status 500: …EngineCore encountered an issue' line: the label takes it without the RuntimeError the client raised around it",
    "vllm-issues/5200.log": "a Space's app prints only its own Spanish message about the model's 'cpu' device (no vLLM error line): not read as a root",
    "vllm-issues/5214.log": "one line, the transformers chat-template ValueError: one chat request refused, the server goes on (none; label api)",
    "vllm-issues/5215.log": "'Error in applying chat template from request: …' without a logger's prefix: a refused request, not a root (label api)",
    "vllm-issues/5252.log": "a healthy-looking start that stops after '# CUDA blocks' (the OOM only in the cell's error output, not the log): no root (label engine, first_exception null)",
    "vllm-issues/5253.log": "rank 0 hangs while loading, then the user interrupts: no root (label weights, first_exception null)",
    "vllm-issues/5150.log": "FastChat's worker on a vLLM whose AsyncLLM lost '.engine': the AttributeError alone names no layer (label api; container arguable)",
    "vllm-issues/5151.log": "'invalid tool call parser: kimi_k2' alone: assumed serving (label config; 1510 labels the same words api)",
    "vllm-issues/5153.log": "the '_OpNamespace' '_C' AttributeError comes first in the excerpt, before the vllm._C import WARNING the label takes",
    "vllm-issues/5159.log": "Modal's 'Runner failed with exception: Runner has been initializing for too long' is no root form (the platform's start-up timeout)",
    "vllm-issues/5014.log": "Unsloth's own 'vLLM's KV Cache can use up to …' line in the log's first lines is taken for the engine's marker; the OOM came while loading (label weights)",
    "vllm-issues/5018.log": "an MPS allocator assert (Apple Silicon) under the bitsandbytes loader's frames: the frames say weights (label device)",
    "vllm-issues/5064.log": "one line, the transformers chat-template ValueError: one chat request refused, the server goes on (none; the label: the frontend's template, api)",
    "vllm-issues/4953.log": "uv's '× No solution found when resolving dependencies:' (a package resolver's failure before vllm runs) is no root form",
    "vllm-issues/4954.log": "a verl job whose vLLM rollout is healthy dies of wandb's CommError (RayTaskError): read as the root; the label says no vLLM layer failed (none)",
    "vllm-issues/4955.log": "a RAG proxy's huggingface_hub HFValidationError interleaved by 'tail -f' with a healthy vLLM's log is taken as the root (label none)",
    "vllm-issues/4906.log": "the Neuron compiler killed by SIGHUP inside load_model: the entrypoint wrapper's later CalledProcessError is taken and the markers say device (label engine)",
    "vllm-issues/4919.log": "a script's shell reporting the server 'Killed' ~50 minutes after serving: taken as a runtime root; the label reads the kill as the operator's stop (none)",
    "vllm-issues/4053.log": "device-side index asserts with no request sent (the reporter's prose says so): nothing in the log names the profiling run",
    "vllm-issues/4075.log": "a cut traceback whose frame lines a terminal wrapped mid-word ('l' / 'ine 64, in …'): its frames are not read, its assert line is not the last of a stack",
    "vllm-issues/4626.log": "Error 803 quoted on the line after 'Unexpected error from cudaGetDeviceCount()': the message's first line is taken (the stage is right)",
    "vllm-issues/4684.log": "Ray's WARNING that TP=4 needs more GPUs than the placement group has, then the operator's SIGTERM: the SIGTERM line is taken",
    "vllm-issues/4802.log": "PyTorch's 'NVML_SUCCESS == r INTERNAL ASSERT FAILED' while building an out-of-memory report in create_weights: the NVML words say device, the label says weights with an OOM root",
    "vllm-issues/2848.log": "cupy missing at the first request after Ready: runtime by the issue's reading, the label says the image",
    "vllm-issues/2849.log": "an op with no CPU kernel at the first request after Ready: runtime by the frames, the label says the image",
    "vllm-issues/2887.log": "an illegal memory access of rank 7 is taken before the engine's 'Worker failed with error' the label takes",
    "vllm-issues/2888.log": "Ray's own 'ERROR serialization.py:462 --' line (its logger's format) is not read as a root",
    "vllm-issues/2905.log": "a destructor's ignored exception at exit, then the shell's segfault line: read as the exit's noise; the label runtime",
    "vllm-issues/2914.log": "dynamo's BackendCompilerFailed is taken before the Triton 'device kernel image is invalid' the label takes",
    "vllm-issues/2917.log": "gcc's 'fatal error: stddef.h' while Triton builds a helper: the image's words, the label the engine",
    "vllm-issues/2933.log": "a Worker's signature mismatch in a source build: the markers say device, the label the image",
    "vllm-issues/2935.log": "pytest's 'E' line read, root right; nothing in the five lines places it (engine by default; label runtime)",
    "vllm-issues/2944.log": "Triton disabled for 0 active drivers is at INFO; the later triton.language error is taken",
    "vllm-issues/2945.log": "a viewer's reversed traceback: its exception line first; the label says the server went on",
    "vllm-issues/2784.log": "an OOM under speculative decoding quoted with a notebook's traceback: that it was serving is in the thread",
    "vllm-issues/2796.log": "argparse's _StoreAction refusing a keyword while the front end builds its parser: frames say config, the label api",
    "vllm-issues/2798.log": "a Mistral tokenizer without an attribute: the weights' words beat the engine frames the label reads",
    "vllm-issues/2742.log": "'... AssertionError: N is not divisible by 8' alone: the vocabulary that does not split is in the thread (weights)",
    "vllm-issues/2770.log": "a sliding-window check in a worker quoted alone: the model's config it rejects is in the thread (weights)",
    "vllm-issues/2811.log": "a bare AssertionError quoted alone: the LoRA loading it came from is in the thread",
    "vllm-issues/2816.log": "a tokenizer that cannot be pickled for one request: read as a failure; the label says the server went on",
    "vllm-issues/2702.log": "Ray's OutOfMemoryError (host memory) while loading: frames say the engine, the label weights",
    "vllm-issues/2703.log": "a RecursionError quoted with the start-up markers up to the device: the label reads the engine from the thread",
    "vllm-issues/2732.log": "a model config without hidden_size quoted alone: the model's files (weights) by its words; the label says config",
    "vllm-issues/6531.log": "a CUDA 'invalid argument' from a DP/EP worker with no frame of the call that failed: read by the error's type (runtime); the label says engine (start-up, marked unsure)",
    "vllm-issues/6535.log": "vLLM's attention selector refusing FlashInfer MLA ('sparse not supported', 'compute capability not supported'): read as the engine's back-end choice; the label says device (the tuned 1819.log, the same refusal on an H200, says engine)",
    "vllm-issues/6537.log": "CUTLASS's FP4 GEMM runner failing to initialise on a Jetson Thor ('Error Internal'), no frame or word naming the device: the engine by default; the label says device (unsure)",
    "vllm-issues/6551.log": "cuDNN's FP8 GEMM failing on a GB10 (err 715) in frames an AI-abridged trace prints as 'file:line in func': no frame form, no word naming the device; the engine by default, the label says device (SM100 path on SM121, unsure)",
    "vllm-issues/6552.log": "FlashInfer's 'Plan index 13 is invalid' quoted alone: the engine by default; the thread says it killed a serving server (runtime, unsure)",
    "vllm-issues/6553.log": "Triton's 'operation not permitted' loading a kernel, quoted under its file and kernel names only: the engine by default; the thread says during decode (runtime, unsure)",
    "vllm-issues/3980.log": "a model config without head_dim quoted from a commit: the model's files (weights) by its words; the label says engine (the mooncake KV connector read it at its set-up)",
    "vllm-issues/2648.log": "flash-attention's varlen_fwd signature after a broken vllm._C: frames say the engine, the label the image",
    "vllm-issues/2649.log": "V0's 'Error in model execution' wrapper is taken before the multimodal placeholder error it carries",
    "vllm-issues/2678.log": "the P2P check subprocess's CalledProcessError is taken before the CUDART error it printed",
    "vllm-issues/2682.log": "V1's engine core logs a KeyError's repr of a config object; the label quotes the message the thread gives",
    "vllm-issues/2691.log": "xgrammar's compiled module missing at the first request: the frames say runtime, the label the image",
    "vllm-issues/2694.log": "an OCR'd screenshot behind '> ': the label's line is not found whole",
    "vllm-issues/2695.log": "a tokenizer class without 'lower': frames say weights, the label config",
    "vllm-issues/2697.log": "a dict passed where a KV-transfer config was expected: frames say the engine, the label config",
    "vllm-issues/1210.log": "a reasoning parser's error in one streamed request, the server going on: read as one request's failure (none); the label says runtime and calls none defensible",
    "vllm-issues/2452.log": "Ray's compiled-DAG channel timed out in the engine core: that it was serving is in the thread",
    "vllm-issues/2454.log": "torch's CUDAGuardImpl warning names the illegal memory access before the terminate; the label takes the warning line",
    "vllm-issues/2455.log": "the excerpt is only the engine cores' repeated 'No available shared memory broadcast block found' lines: a hang, placed in the engine's start-up since nothing says the API was ready (label runtime, from the thread)",
    "vllm-issues/2458.log": "Ray Serve's health check marking a replica unhealthy, at INFO among vLLM's stats: no failure line",
    "vllm-issues/2602.log": "vllm._C's import warning alone on a TPU host: nothing in the excerpt says the platform has no vllm._C",
    "vllm-issues/2629.log": "the offline client's 'died unexpectedly' note quoted in prose at a normal exit: taken for a failure",
    "vllm-issues/2515.log": "k9s rows glued into one line; exit code 132 is the only sign: no root line",
    "vllm-issues/2520.log": "an HSA memory fault alone: that it came after Ready is in the PR's text",
    "vllm-issues/2542.log": "Triton's 'Failed to initialize Python stub: TypeError' is not a recognised root form",
    "vllm-issues/2544.log": "an ExceptionGroup from a TaskGroup: its sub-exception is not read",
    "vllm-issues/2554.log": "zmq's 'Operation not supported' at start-up: the markers say device, the label the front end's socket",
    "vllm-issues/2557.log": "a config object without an attribute while building the model: the frames say weights, the label config",
    "vllm-issues/2558.log": "a LoRA adapter's missing file: the label takes the FileNotFoundError, the classifier the RuntimeError wrapping it",
    "vllm-issues/2562.log": "a bare AssertionError: the frames say device, the label config",
    "vllm-issues/2570.log": "MistralTokenizer without an attribute during profiling: the frames say the engine, the label weights",
    "vllm-issues/2278.log": "Ray's C++ 'Unhandled exception … watchdog … illegal memory access' alone: that it came while serving is in the thread",
    "vllm-issues/2279.log": "two NCCL 'port error' lines of one flap; the label takes the second (the first recovered), the classifier the first",
    "vllm-issues/2280.log": "an NPU kernel failure relayed by 'Worker failed with error': that it came at a request is in the thread",
    "vllm-issues/2282.log": "a native segfault banner with no vLLM line: that it came while serving is in the thread",
    "vllm-issues/2283.log": "an OOM quoted alone: that it came at a long request is in the thread (an OOM with no other evidence is the engine's)",
    "vllm-issues/2403.log": "NCCL's 'unhandled cuda error' names the collective; the driver too old for CUDA is in the thread",
    "vllm-issues/2344.log": "NCCL's graph-capture warning as the whole excerpt: a warning, not a failure line; the cause (an NCCL pulled in by xformers) is in the thread",
    "vllm-issues/2443.log": "an OOM quoted alone: that it came while serving is in the thread title",
    "vllm-issues/1266.log": "xformers refusing its inputs, quoted with no start-up line: the image's build is in the thread, not the log (session 9's last default, serving, is wrong here)",
    # Tuned logs the classifier gets wrong, each for a reason no general rule can fix
    # without fitting that one excerpt (strict: the test fails once one passes).
    "vllm-issues/133.log": "a one-line excerpt with no exception type, no level and no vLLM word",
    "vllm-issues/233.log": "a bare HIP error with no stack, wording or start-up line; the label (device,"
    " 'unsure' in its note) comes from the thread; by the same evidence a CUDA error is runtime",
    "vllm-issues/238.log": "stopped by an outside SIGTERM: the root is a DEBUG 'EngineCore exiting.' line and"
    " the excerpt ends inside the API server's traceback, before its exception line",
    "vllm-issues/239.log": "'Engine core proc … died unexpectedly' with nothing failing after it reads like the"
    " teardown noise of 166/207 (labelled none); the coredump is only in the reporter's prose",
    "vllm-issues/240.log": "root right (Ray's 'A worker died or was killed' line); the stage: killed during"
    " LLM() set-up in a notebook, an IPython-format traceback, no stage evidence in the lines (engine from the"
    " thread); by its words alone a dead worker reads as runtime",
    "vllm-cpu-faults/ld-preload-listen-double-free.log": "a native crash right after the config lines; that"
    " the first listen() is the engine handshake's socket is known from the fault, not from the log",
    "vllm-issues/287.log": "an illegal memory access reported by the NCCL watchdog after a cut '[rank0]' prefix;"
    " that requests were being served shows only in a tqdm 'toks/s' tail glued to the same line",
    "vllm-issues/295.log": "an OOM quoted alone; that it happened while loading weights comes from the"
    " reporter's --dtype and allocation sizes, not from any line",
    "vllm-issues/156.log": "the stage comes from the thread (an FP8 checkpoint being loaded), nothing in"
    " the excerpt names the weights",
    # fresh excerpts 298-382 (labelled before any classifier ran on them; the rest were fixed by rules)
    "vllm-issues/373.log": "the reporter's own client traceback (KeyError) after the server's 404s: nothing"
    " in the lines says which process printed it",
    "vllm-issues/356.log": "the gated-repo message is quoted in prose after a prose line that says 'cannot'",
    "vllm-issues/608.log": "an HCCL (Ascend) init failure on the first pipeline receive: runtime by the thread's"
    " title ('during inference'); by its words a collective's set-up (engine)",
    "vllm-issues/610.log": "an NPU OOM while the model is built, no stack or start-up line: OOM alone reads as"
    " the engine's profiling",
    "vllm-issues/613.log": "an IndexError in the TPU worker's profiler set-up: device from the thread, the"
    " frames are tpu-inference's own",
    "vllm-issues/642.log": "an AttributeError on 'model_executor' from OpenRLHF's own code after start-up;"
    " runtime by the thread (the labeller marks config / none defensible)",
    "vllm-issues/647.log": "a Triton C++ assertion cut mid-word ('Assertio') by the stored copy",
    "vllm-issues/728.log": "stage right; the label quotes the wrapped continuation ('undefined symbol: …') of"
    " the ImportError line the classifier reports (both are in the reported stack)",
    "vllm-issues/690.log": "FlashMLA's native 'Failed to create tensormap' with no crash word the look-back knows",
    "vllm-issues/803.log": "stage right; a whole V0 traceback flattened into one line by the page: it is split again,"
    " but the label quotes the code line and the exception line joined ('raise … from exc asyncio.exceptions.TimeoutError')",
    "vllm-issues/881.log": "Triton's PTXASError is reported; the label's root is ptxas's own 'not supported on"
    " .target sm_121a' line printed before it, which names the device",
    "vllm-issues/975.log": "an NPU OOM over Ray while the model is built (a torch/utils/_device.py frame): the"
    " OOM's type says engine, nothing in the excerpt says the weights",
    "vllm-issues/1000.log": "Ray's native 'Unhandled exception … what(): … illegal memory access' from NCCL's"
    " watchdog: ProcessGroupNCCL names the engine's distributed set-up before the illegal access names runtime",
    "vllm-issues/1005.log": "CUTLASS's 'not implemented' line for the GPU's arch carries no exception word; the"
    " later WARNING 'Failed to pickle inputs of failed execution' is reported",
    "vllm-issues/1045.log": "a fragment of an ImportError message quoted in backticks, nothing else: a vLLM excerpt by its"
    " stack's words (transformers), but no line of it is a root: none",
    "vllm-issues/1082.log": "Ray's 'A worker died' warning printed before the NCCL watchdog timeout is taken as"
    " the root (the earliest crash line); the label takes the watchdog line (SeqNum=1: engine)",
    "vllm-issues/1088.log": "a weight_loader shape RuntimeError from a Ray worker with no frame kept: the process"
    " says engine, the thread says weights",
    "vllm-issues/1089.log": "stage right; the label takes the gcc CalledProcessError quoted inside the"
    " BackendCompilerFailed line above it",
    "vllm-issues/1170.log": "a bare vocab-size AssertionError pasted alone ('250682 is not divisible by 8'): nothing in the line says weights (the label rests on the thread)",
    "vllm-issues/1111.log": "Ray placement 'required GPUs exceeds the total': this labeller says engine (distributed set-up), 227/228's labellers say device for the same words",
    "vllm-issues/1124.log": "Ray 'does not allocate any GPUs on the driver node': engine here, device in 228 for the same words (a labelling conflict, see 1111)",
    "vllm-issues/1130.log": "torch's TCPStore recvValue WARNING with its C++ stack is the root (session 14), read as the rendezvous's (engine); runtime rests on the thread (a headless node losing the head after serving)",
    "vllm-issues/1361.log": "KServe's own wrapper line ('Failed to start model server: integer division or modulo by zero'), no vLLM line: an ERROR line with no exception's type is no root (none); the zero GPUs behind it are in the thread",
    "vllm-issues/1316.log": "a worker's OOM among interleaved workers with no frame of its own; weights rests on a sibling worker's method (the labeller marks engine defensible)",
    "vllm-issues/1221.log": "the KV-offload assert is only a WARNING the worker survives; whether the engine died is not in the excerpt",
    "vllm-issues/1460.log": "DeepGEMM's illegal address under an EngineCore prefix cut above its header: start-up (the label) rests on the thread; the words read as a failure while serving",
    "vllm-issues/1465.log": "a bare TypeError pasted under the launch command; that it came from building the speculative config is in the thread",
    "vllm-issues/1466.log": "a worker's OOM with nothing in the excerpt saying requests were being served (the labeller marks engine defensible)",
    "vllm-issues/1469.log": "'Worker failed with error:' with the worker's message on the next line and nothing else: that line is the root (engine by default), the label quotes the message under it",
    "vllm-issues/6394.log": "a TPU JAX TypeError (a ShapeDtypeStruct argument) alone in the excerpt: engine by default (label weights, marked unsure)",
    "vllm-issues/6440.log": "Ray's raylet line that a worker died while executing a task, alone: engine by default (label runtime, from the thread)",
    "vllm-issues/6443.log": "unsloth's 'vllm_process failed to load!' after vLLM's start-up lines reached the device: device by the markers (label container, marked unsure)",
    "vllm-issues/6445.log": "a CUDA out-of-memory logged by V0's engine.py with no frames: engine by its type (label runtime, marked unsure)",
    "vllm-issues/6446.log": "the excerpt ends at the engine core's 'Invocation of collective_rpc method failed' ERROR line (no exception line): the prose's quoted 'address already in use' is the only root left (api; label runtime)",
    "vllm-cpu-faults/rct-without-trust-remote-code.log": "a remote-code tokenizer served without --trust-remote-code: transformers' refusal is read by its frames as the config (label weights, marked unsure: round 9's labeller notes rc-config-without-trust-remote-code was labelled config)",
    "vllm-cpu-faults/rct-bpe-duplicate-rank.log": "an unprefixed traceback past the log's head ending in tiktoken's 'pyo3_runtime.PanicException' (no 'rror' in the line): the prefilter never reads it (a second word for it was measured too costly, see patterns.toml [prefilter])",
    "vllm-issues/6475.log": "a reporter's quoted 'Server process exited unexpectedly with code 2' is taken before the quoted argparse error below it (runtime by its type; label config)",
    "vllm-issues/6486.log": "the only line is a quoted V0 ERROR line 'Bfloat16 is only supported on GPUs with compute capability …' with no exception type: no root (label device)",
    "vllm-cpu-faults/cc-cxx-bad-include-compiled.log": "Inductor's CppCompileError is reported; the label quotes gcc's 'fatal error' line in its message's output below it",
    "vllm-cpu-faults/cc-hook-aot-call-fails-serving.log": "the RuntimeError line 'backend=inductor raised:' is reported; the label quotes gcc's 'fatal error' line of the message printed under it",
    "vllm-cpu-faults/cc-path-no-compiler-compiled.log": "a PATH without lscpu: '/bin/sh: 1: lscpu: not found' is read as the image's and taken first (label device, the CPU binding's CalledProcessError; marked unsure, container defensible)",
    "vllm-cpu-faults/cc-cxx-bin-false-compiled.log": "stage and root right; the label's oom_root_cause is false where the log shows no out-of-memory at all, which the classifier reports as null (none seen)",
    "vllm-cpu-faults/cc-cxx-bin-false-dynamo-verbose-compiled.log": "stage and root right; the label's oom_root_cause is false where the log shows no out-of-memory at all, which the classifier reports as null (none seen)",
    "vllm-cpu-faults/cc-cxx-missing-compiled.log": "stage and root right; the label's oom_root_cause is false where the log shows no out-of-memory at all, which the classifier reports as null (none seen)",
    "vllm-cpu-faults/cc-path-only-lscpu-no-compiler-compiled.log": "stage and root right; the label's oom_root_cause is false where the log shows no out-of-memory at all, which the classifier reports as null (none seen)",
    "vllm-issues/1417.log": "torch's c10d 'server socket has timed out, will retry' at WARNING level: a rendezvous that tries again is never the root (nor the later 'TCP client failed … retrying' with its C++ stack)",
    "vllm-issues/1423.log": "Gaudi's 'FATAL ERROR :: MODULE:PT_LAZY' after the weights loaded: nothing in the line names the device (the thread says Gaudi 1 is unsupported)",
    "vllm-issues/1431.log": "'Required aspect fp64 is not supported on the devic': the stored copy cut the word that names the layer",
    "vllm-issues/1510.log": "KeyError('invalid tool call parser: openai') with one frame: the frontend's tool-parser set-up (api) is in the thread, nothing in the line names a layer",
    "vllm-issues/1716.log": "torch's segfault handler with no frames kept (the KV-offload swap is in the thread): a native crash nothing places reads as the engine",
    "vllm-issues/1620.log": "a missing vLLM op ('_OpNamespace' '_C' has no attribute rms_norm) on the first request: after the API was ready, so runtime; the label says container (unsure: runtime)",
    "vllm-issues/1667.log": "fastsafetensors' own '[PG0] <time> - …' lines carry the error ('Producer batch 0 failed: data_offsets'): not a form read as a root",
    "vllm-issues/1675.log": "Ray's dead-actor paragraph (SYSTEM_ERROR) alone; the OOM while loading is the thread's diagnosis",
    "vllm-issues/1570.log": "Xinference's UnpickleableError wraps the pydantic error (qwen3_vl unknown to transformers) and is taken as the root; the stage is right",
    "vllm-issues/1586.log": "a bare '__init__() got an unexpected keyword argument' without the EngineArgs class named: nothing says which __init__",
    "vllm-issues/1588.log": "the only error is inline in a prose sentence after a backtick: not read as a log line",
    "vllm-issues/1865.log": "a CUDA driver OOM during the GPTQ-to-Marlin repack with nothing in the excerpt naming the loader: the OOM alone reads as the engine's set-up",
    "vllm-issues/1877.log": "'MiniCPMV only supports versions 2.0, …' quoted alone: nothing in the line names a layer",
    "vllm-issues/1878.log": "a processor warning alone, no vLLM word or line: taken for not a vLLM log",
    "vllm-issues/1816.log": "FlashInfer's TVM_FFI_ICHECK source line quoted without its exception line: the cut traceback's head is taken",
    "vllm-issues/1825.log": "a community guide's reworded error: nothing in it names a layer",
    "vllm-issues/1827.log": "an OOM reworded by a guide with nothing in it saying requests were being served",
    "vllm-issues/1968.log": "an UnboundLocalError in the memory check on a Jetson (NVML missing): nothing in the line names the device",
    "vllm-issues/1979.log": "a fastapi version mismatch ('_IncludedRouter' has no attribute 'path') quoted alone: nothing in it names the API's set-up",
    "vllm-issues/1984.log": "root right (the TPU runtime's RESOURCE_EXHAUSTED glog line); that the weights were being loaded is in the prose",
    "vllm-issues/1835.log": "root right (UCX's 'Caught signal 11' in a Ray worker); the label (NCCL set-up under a vGPU) rests on the thread, a segfault's words read as runtime",
    "vllm-issues/1837.log": "root right (HAMi's 'Illegal device id' line before the segfault); 'illegal device' reads as the device, the label says the engine's NCCL set-up",
    "vllm-issues/1840.log": "a worker's death reported only by 'Process SpawnProcess-1:1:' and the shell's 'Killed': the label takes the first, the classifier the kill",
    "vllm-issues/1846.log": "root right (gloo's 'Timed out waiting … for recv'); whether the hang was on a served request is in the thread",
    "vllm-issues/1847.log": "a Ray placement-group timeout (a node missing): 'placement_group_specs=' reads as the config's, the label says the engine's distributed set-up",
    "vllm-issues/1926.log": "a reshape RuntimeError from a V0 worker: that it came with a disaggregated KV transfer while serving is in the thread",
    "vllm-issues/1927.log": "'LoRA rank 32 is greater than max_lora_rank 16' quoted by the engine: the adapter's (weights); that it was loaded for a request is in the thread",
    "vllm-issues/1935.log": "a shape RuntimeError under the engine's markers: that it came with the first request (ngram speculative decoding) is in the thread",
    "vllm-issues/1888.log": "a Harmony parser error under 'Error in chat completion stream generator' (a per-request error the server survives) labelled runtime from the thread",
    "vllm-issues/1892.log": "'Worker failed with error … illegal memory access': the label (start-up) rests on the thread, an illegal access reads as runtime",
    "vllm-issues/1896.log": "'FusedMoE flashinfer kernels are only supported for Llama4' from a worker: the label (runtime) rests on the thread",
    "vllm-issues/1909.log": "a bare AssertionError padded with spaces from a worker: the label (weights) rests on the thread",
    "vllm-issues/2073.log": "'Failed to find a kernel that can implement the WNA16 linear layer' quoted alone: the label says weights (config or device defensible)",
    "vllm-issues/2074.log": "root right (add_lora's 'unsupported LoRA weight', a flattened traceback split again); its frames are the API server's LoRA set-up (api), the label says weights",
    "vllm-issues/2019.log": "root right (NCCL's 'Duplicate GPU detected' WARN line); the weight-sync communicator's set-up reads as the engine's, the label says runtime",
    "vllm-issues/2021.log": "the excerpt opens with the ImportError quoted (a curly quote at its end), then the traceback: the first, bare line is taken",
    "vllm-issues/2044.log": "the uvicorn lifespan's KeyError: 'log_stats' quoted alone: nothing in it names the API's set-up",
    "vllm-issues/2047.log": "an OOM with nothing in the excerpt saying requests were being served (the label marks the sampler's warm-up defensible)",
    "vllm-issues/2056.log": "Ray's raylet line about /dev/shm is at W level: a warning is never the root",
    "vllm-issues/2057.log": "NIM's JSON records: the first error is a Rust log line ('error sending request for url') inside a record whose level is 'None'",
    "vllm-issues/2104.log": "one Ascend line ('the socversion … does not match the current device') and no vLLM word: taken for not a vLLM log",
    "vllm-issues/2106.log": "Intel's 'UR_RESULT_ERROR_OUT_OF_RESOURCES' from a worker: that a larger batch was being served is in the thread",
    "vllm-issues/2109.log": "Neuron's 'nrt_tensor_allocate … Allocation Failure' quoted alone: neither an OOM word nor a layer in it",
    "vllm-issues/2124.log": "Ascend's inner error in aclnnMatmul: that the server was serving is in the thread",
    "vllm-issues/1723.log": "stage and root right; the label says no OOM appears, an OOM line after the root is read as a consequence (oom false)",
    "vllm-issues/2119.log": "stage and root right (the shell's 'Killed'); that the kernel's OOM killer sent it is in the thread (oom true)",
    "vllm-issues/2135.log": "root right (HIP's 'HSA_AMD_AGENT_INFO_MEMORY_AVAIL query failed'); a native error nothing places reads as the engine, the label says the device",
    "vllm-issues/2161.log": "a NIXL handshake's 'engine ID mismatch' the server survives (label none); nothing in the line says the server went on",
    "vllm-issues/2177.log": "the LoRA loader's 'support for this model may be added in the future' quoted alone: weights by the label, the words read as the config",
    "vllm-issues/2194.log": "an OOM re-logged by Xinference with nothing in the excerpt saying requests were being served",
    "vllm-issues/2199.log": "a broadcast_shapes ValueError from the engine core: that it came with a long request is in the thread",
    "vllm-issues/2207.log": "Ascend CANN's device assertion and DumpHead lines with no vLLM word: a vLLM excerpt by its stack's words (CANN), but none of its lines is read as a root: none",
    "vllm-issues/2221.log": "'module torch has no attribute nvfp4' quoted alone: an API mismatch reads as the image's, the label (after ready) rests on the issue's title",
    "vllm-issues/2261.log": "a bare AssertionError whose frames are the model loader's: the label says the launch's settings (config)",
    "vllm-issues/2262.log": "a traceback joined into one line with double spaces: split again, but the label quotes the assert's code and its exception as one",
    "vllm-issues/2263.log": "the front end's _validate_input traceback cut before its exception (a request refused, label none): the cut traceback is taken",
    "vllm-issues/2265.log": "root right (the reporter's '报错： ModuleNotFoundError' line); an import's words read as the image, the label says the engine (remote code)",
    "vllm-issues/3004.log": "a two-pod start-up that hangs in NCCL set-up: no failure line, so no root; the label the engine (a hang)",
    "vllm-issues/3011.log": "a traceback flattened onto one line with a prefix before each frame: its source line 'raise RuntimeError(f\"NCCL error …\")' is taken, not the exception",
    "vllm-issues/3053.log": "a job platform's console frame around every line: the watchdog's what() is taken before the 'terminate called' line the label takes",
    "vllm-issues/3116.log": "vllm-omni's stage start-up timeout: 'model loading or initialization' names no one layer; the thread found an incomplete download",
    "vllm-issues/3154.log": "the label's root is the vllm._C import warning on a Windows paste; the CalledProcessError of the model inspection after it is taken",
    "vllm-issues/3156.log": "a notebook's '141.8s | 1015 |' columns before each line: its traceback's head is taken, the kernel's death is not read",
    "vllm-issues/3157.log": "an LLVM/Triton compile error 'stack frame size exceeds limit' at a file:line:col in a wrapped paste: not read",
    "vllm-issues/3160.log": "a start-up that hangs after NCCL set-up: no failure line, so no root; the label the engine (a hang)",
    "vllm-issues/3165.log": "a Gaudi start-up that hangs (the thread says so): no failure line, so no root; the label the engine",
    "vllm-issues/2952.log": "an OOM with 138.8 of 139.8 GiB in use: the OOM's words say the engine's budget, the label says it was serving",
    "vllm-issues/3258.log": "a ZMQError while the engine starts (the thread says a remote-code model's load timed out): nothing names a layer",
    "vllm-issues/3261.log": "a two-GPU RCCL start-up that hangs at CUDA-graph capture: no failure line, so no root; the label the engine",
    "vllm-issues/3354.log": "Gaudi's 'PT_DEVMEM Allocation failed' from a calibration script: not read as an OOM, nothing names a layer",
    "vllm-issues/3365.log": "a prose sentence quoting 'No available memory for the cache blocks': the label counts it an OOM, the classifier the KV cache's sizing",
    "vllm-issues/3553.log": "an OOM the reporter says came while loading, quoted without frames: the OOM's words say the engine's budget, the label weights",
    "vllm-issues/3501.log": "a cuBLAS CUDA error quoted alone from a prefill worker's start-up: the CUDA words say runtime, the label the engine's set-up",
    "vllm-issues/3503.log": "Xinference relays vLLM's CUDA error inside its own traceback: the traceback's head is taken, the relayed line not read",
    "vllm-issues/3504.log": "BentoML calling a vLLM class with a keyword it no longer takes: nothing names a layer; the label the image (versions)",
    "vllm-issues/3703.log": "a draft bug report that reordered and elided the pod's lines: the PermissionError on '/.config' is taken, the label the InductorError on '/.triton'",
    "vllm-issues/3709.log": "a host OOM killer's log that just stops: no failure line of vLLM's; the OOM is in the repository's write-up",
    "vllm-issues/3754.log": "Mooncake's FILE_OPEN_FAIL glog lines while serving: the native default says the engine's set-up; the label runtime",
    "vllm-issues/3761.log": "a worker's shape error quoted without frames: the worker default says the engine's set-up; the fix was in serving",
    "vllm-issues/3774.log": "an Ascend operator's error code quoted with the author's '...': a bare error code is no root (none)",
    "vllm-issues/3777.log": "the engines' handshake timed out while weights still loaded: the timeout's words say the engine, the label weights",
    "vllm-issues/3783.log": "a kv-cache spec class that does not pickle: nothing names a layer; the fix was in the engine's set-up",
    "vllm-issues/3805.log": "an engine core's ValueError in a DP run quoted alone: the engine-core default says the set-up; the fix was in serving",
    "vllm-issues/3812.log": "a short quote from a commit message: nothing in it names a layer (default runtime); the fix it came with says config",
    "vllm-issues/3819.log": "a short quote from a commit message: nothing in it names a layer (default runtime); the fix it came with says weights",
    "vllm-issues/3820.log": "a short quote from a commit message: nothing in it names a layer (default runtime); the fix it came with says weights",
    "vllm-issues/3823.log": "a TPU scoped-VMEM RESOURCE_EXHAUSTED while serving: not read as an OOM, and nothing names a layer",
    "vllm-issues/3825.log": "a short quote from a commit message: nothing in it names a layer (default runtime); the fix it came with says config",
    "vllm-issues/3831.log": "a short quote from a commit message: nothing in it names a layer (default runtime); the fix it came with says weights",
    "vllm-issues/3834.log": "a short quote from a commit message: nothing in it names a layer (default runtime); the fix it came with says device",
    "vllm-issues/3837.log": "a short quote from a commit message: nothing in it names a layer (default runtime); the fix it came with says weights",
    "vllm-issues/3908.log": "a commit message's prose quoting the error between quotes (wrapped): nothing names a layer (default runtime); the fix says the device",
    "vllm-issues/3916.log": "a commit message's 'Fixes: RuntimeError: …' line: not read as a quote (a trailer, no quotes): unknown",
    "vllm-issues/3919.log": "prose quoting an AttributeError a request raised (the label: one request failed, the server went on): taken as the root",
    "vllm-issues/3851.log": "an HPU config key missing in an old Synapse build, raised in warm-up: engine frames, the label the image (versions)",
    "vllm-issues/3854.log": "pytest's 'E ' column before the engine core's prefix and a wrap inside 'No such file or directory: 'ninja'': the image's words are not read",
    "vllm-issues/3860.log": "pydantic's validation error reporting a missing package (accelerate): the validation words say config, the label the image",
    "vllm-issues/3872.log": "a test harness's AssertionError wrapping the run's output is taken; the label takes torch.compile's AttributeError",
    "vllm-issues/3985.log": "a commit message's prose whose error is not read as a quote (no root); the fix it came with says runtime",
    "vllm-issues/3987.log": "a quote from a commit message: nothing in it names a layer (default runtime); the fix it came with says container",
    "vllm-issues/3988.log": "a quote from a commit message: nothing in it names a layer (default runtime); the fix it came with says weights",
    "vllm-issues/3994.log": "pytest's 'E' line under transformers' tokenizer code read, root right; no frame of vLLM's places it (engine by default; label weights)",
    "vllm-issues/3998.log": "a quote from a commit message: nothing in it names a layer (default runtime); the fix it came with says container",
    "vllm-issues/4002.log": "a quote from a commit message: nothing in it names a layer (default runtime); the fix it came with says container",
    "vllm-issues/4003.log": "a quote from a commit message: the exception-type rule says config; the fix it came with says weights",
    "vllm-issues/4007.log": "a quote from a commit message: the message rule says device; the fix it came with says runtime",
    "vllm-issues/4008.log": "a commit message's prose whose error is not read as a quote (no root); the fix it came with says engine",
    "vllm-issues/4016.log": "a quote from a commit message: nothing in it names a layer (default runtime); the fix it came with says weights",
    "vllm-issues/4019.log": "a quote from a commit message: nothing in it names a layer (default runtime); the fix it came with says device",
    "vllm-issues/4025.log": "a quote from a commit message: nothing in it names a layer (default runtime); the fix it came with says weights",
    "vllm-issues/4028.log": "a quote from a commit message: the message rule says device; the fix it came with says device; another line taken as the root",
    "vllm-issues/4032.log": "a quote from a commit message: the frames rule says engine; the fix it came with says container",
    "vllm-issues/4036.log": "a quote from a commit message: nothing in it names a layer (default runtime); the fix it came with says device",
    "vllm-issues/4044.log": "a quote from a commit message: nothing in it names a layer (default runtime); the fix it came with says weights",
    "vllm-issues/4047.log": "a quote from a commit message: nothing in it names a layer (default runtime); the fix it came with says weights",
    "vllm-issues/4048.log": "a quote from a commit message: nothing in it names a layer (default runtime); the fix it came with says device",
    "vllm-issues/4049.log": "a quote from a commit message: the message rule says container; the fix it came with says engine",
    "vllm-issues/1711.log": "nothing in the log names a layer, nor talks of serving: assumed the engine's set-up (engine; label runtime)",
    "vllm-issues/1717.log": "nothing in the log names a layer, nor talks of serving: assumed the engine's set-up (engine; label runtime)",
    "vllm-issues/2224.log": "nothing in the log names a layer, nor talks of serving: assumed the engine's set-up (engine; label runtime)",
    "vllm-issues/2230.log": "nothing in the log names a layer, nor talks of serving: assumed the engine's set-up (engine; label runtime)",
    "vllm-issues/2459.log": "nothing in the log names a layer, nor talks of serving: assumed the engine's set-up (engine; label runtime)",
    "vllm-issues/2800.log": "nothing in the log names a layer, nor talks of serving: assumed the engine's set-up (engine; label runtime)",
    "vllm-issues/2735.log": "nothing in the log names a layer, nor talks of serving: assumed the engine's set-up (engine; label runtime)",
    "vllm-issues/2879.log": "nothing in the log names a layer, nor talks of serving: assumed the engine's set-up (engine; label runtime)",
    "vllm-issues/3000.log": "nothing in the log names a layer; its words are a server's ('request'), none a start-up's: assumed it failed while serving (runtime; label engine)",
    "vllm-issues/3775.log": "nothing in the log names a layer, nor talks of serving: assumed the engine's set-up (engine; label runtime)",
    "vllm-issues/3800.log": "nothing in the log names a layer, nor talks of serving: assumed the engine's set-up (engine; label runtime)",
    "vllm-issues/3904.log": "nothing in the log names a layer, nor talks of serving: assumed the engine's set-up (engine; label runtime)",
    "vllm-issues/3906.log": "nothing in the log names a layer, nor talks of serving: assumed the engine's set-up (engine; label runtime)",
    "vllm-issues/3864.log": "nothing in the log names a layer, nor talks of serving: assumed the engine's set-up (engine; label runtime)",
    "vllm-issues/3866.log": "nothing in the log names a layer, nor talks of serving: assumed the engine's set-up (engine; label runtime)",
    "vllm-issues/3877.log": "nothing in the log names a layer, nor talks of serving: assumed the engine's set-up (engine; label runtime)",
    "vllm-issues/3955.log": "nothing in the log names a layer, nor talks of serving: assumed the engine's set-up (engine; label runtime)",
    "vllm-issues/3999.log": "nothing in the log names a layer, nor talks of serving: assumed the engine's set-up (engine; label runtime)",
    "vllm-issues/4010.log": "nothing in the log names a layer, nor talks of serving: assumed the engine's set-up (engine; label runtime)",
    "vllm-issues/4038.log": "nothing in the log names a layer, nor talks of serving: assumed the engine's set-up (engine; label runtime)",
    "vllm-issues/3459.log": "nothing in the log names a layer; a native crash inside GPU code: assumed the engine's set-up (engine; label runtime)",
    "vllm-issues/5600.log": "the root's message says 'NCCL error' (engine; label runtime)",
    "vllm-issues/5601.log": "no root failure in the log (none; label container)",
    "vllm-issues/5603.log": "no root failure in the log (none; label runtime)",
    "vllm-issues/5653.log": "nothing in the log names a layer, nor talks of serving: assumed the engine's set-up (engine; label weights)",
    "vllm-issues/5662.log": "nothing in the log names a layer, nor talks of serving: assumed the engine's set-up (engine; label runtime)",
    "vllm-issues/5665.log": "nothing in the log names a layer, nor talks of serving: assumed the engine's set-up (engine; label weights)",
    "vllm-issues/5704.log": "the root's message says 'OutOfMemoryError' (engine; label runtime)",
    "vllm-issues/5705.log": "the root's message says 'No platform detected' (device; label container)",
    "vllm-issues/5706.log": "another line taken as the root ('(APIServer pid=1) Traceback (most recent call last):'); stage right",
    "vllm-issues/5707.log": "no root failure in the log (none; label api)",
    "vllm-issues/5736.log": "no root failure in the log (none; label runtime)",
    "vllm-issues/5755.log": "oom flag None: no out-of-memory in the log; the label says false, where its README says null when no OOM appears (a labelling slip, kept as labelled)",
    "vllm-issues/5757.log": "nothing in the log names a layer; its words are a start-up's ('loading'): assumed the engine's set-up (engine; label config)",
    "vllm-issues/5758.log": "oom flag None: no out-of-memory in the log; the label says false, where its README says null when no OOM appears (a labelling slip, kept as labelled)",
    "vllm-issues/5759.log": "oom flag None: no out-of-memory in the log; the label says false, where its README says null when no OOM appears (a labelling slip, kept as labelled)",
    "vllm-issues/5760.log": "oom flag None: no out-of-memory in the log; the label says false, where its README says null when no OOM appears (a labelling slip, kept as labelled)",
    "vllm-issues/5779.log": "the start-up had reached engine (line 6) (engine; label device)",
    "vllm-issues/5781.log": "the root's message says 'ValueError: Engine KV cache config requests 999999 blocks but the Metal paged pool was allocated with 1846. This usually means --num-gpu-blocks-override' (config; label engine)",
    "vllm-issues/5784.log": "nothing in the log names a layer, nor talks of serving: assumed the engine's set-up (engine; label api)",
    "vllm-issues/5785.log": "another line taken as the root ('ERROR 03-18 09:23:42 config.py:100] Error retrieving file list: cannot import na'); stage right",
    "vllm-issues/5852.log": "nothing in the log names a layer, nor talks of serving: assumed the engine's set-up (engine; label config)",
    "vllm-issues/5853.log": "no root failure in the log (none; label engine)",
    "vllm-issues/5910.log": "oom flag False (label None)",
    "vllm-issues/5914.log": "nothing in the log names a layer; its words are a start-up's ('部署时'): assumed the engine's set-up (engine; label config)",
    "vllm-issues/5915.log": "nothing in the log names a layer; a native crash inside GPU code: assumed the engine's set-up (engine; label device)",
    "vllm-issues/5954.log": "nothing in the log names a layer; its words are a server's ('inference'), none a start-up's: assumed it failed while serving (runtime; label engine)",
    "vllm-issues/5965.log": "nothing in the log names a layer; its words are a start-up's ('loading'): assumed the engine's set-up (engine; label weights)",
    "vllm-issues/6006.log": "no root failure in the log (none; label config)",
    "vllm-cpu-faults/sigstop-engine-at-load.log": "no root failure in the log (none; label weights)",
    "vllm-cpu-faults/sigstop-worker-at-load.log": "no root failure in the log (none; label weights)",
    "vllm-cpu-faults/ulimit-u-64.log": "the root's message says 'can't start new thread' (container; label engine)",
    "vllm-cpu-faults/ulimit-v-1g.log": "the root's message says 'Resource temporarily unavailable' (container; label engine)",
    "vllm-issues/6053.log": "the root's message says 'Insufficient devices' (device; label engine)",
    "vllm-issues/6054.log": "the root's message says 'sh: 1: Leader_Node_Address: not found' (container; label config)",
    "vllm-issues/6059.log": "nothing in the log names a layer, nor talks of serving: assumed the engine's set-up (engine; label container)",
    "vllm-issues/6102.log": "the root's message says 'OutOfMemoryError' (engine; label weights)",
    "vllm-issues/6115.log": "nothing in the log names a layer; its words are a server's ('推理'), none a start-up's: assumed it failed while serving (runtime; label config)",
    "vllm-issues/6151.log": "another line taken as the root ('(Worker_TP6_EP6 pid=903) ERROR 06-12 08:47:02 [multiproc_executor.py:962] Assert'); stage right",
    "vllm-issues/6162.log": "another line taken as the root ('ValueError: [INVALID PARAMETER]: error code= 1(at .../torch_xmlir/csrc/new_xccl/'); stage right",
    "vllm-issues/6164.log": "the root's stack runs through get_attn_backend_cls (cuda.py) (engine; label config)",
    "vllm-issues/6165.log": "the root's stack runs through a call to load_model (weights; label config)",
    "vllm-cpu-faults/kill9-api-inflight.log": "the killed API server printed nothing: the log ends after a 200 as a healthy one may; no root failure in the log (none; label runtime)",
    "vllm-cpu-faults/st-shard-is-fifo.log": "a hang (a FIFO as the shard): the log ends in start-up with no error, as 19 tuned none excerpts do; no root failure in the log (none; label weights)",
    "vllm-cpu-faults/ulimit-cpu-10s.log": "the start-up had reached api (line 61) (api; label engine)",
    "vllm-cpu-faults/env-kvcache-space-1000g.log": "oom flag None (label True)",
    "vllm-cpu-faults/args-lora-modules-missing.log": "the start-up had reached api (line 69) (api; label weights)",
    "vllm-cpu-faults/env-vllm-port-garbage.log": "a chained re-raise (int() of VLLM_PORT, then 'VLLM_PORT must be a valid integer'): the label takes the second, the project the cause; the start-up had reached engine (line 52) (engine; label config)",
    "vllm-cpu-faults/sigint-at-engine-init.log": "no root failure in the log (none; label engine)",
    "vllm-cpu-faults/log-level-bogus.log": "a bad VLLM_LOGGING_LEVEL fails in the logging set-up before vLLM starts: the label says config (a bad value), py-logging-config-missing's says container for the same set-up (a labelling conflict); the root's stack has no vLLM frame past the program's entry (its command line): the process start (container; label config)",
    "vllm-cpu-faults/args-generation-config-missing.log": "a chained re-raise: the label takes the later ValueError, the project the cause (HFValidationError); another line taken as the root ('huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name'); stage right",
    "vllm-cpu-faults/kill9-api-at-args.log": "the API server killed at start-up printed nothing (a silent death: the log just ends, as a start-up still going would); no root failure in the log (none; label config)",
    "vllm-cpu-faults/kill-hup-api-at-arch.log": "the API server killed at start-up printed nothing (a silent death: the log just ends, as a start-up still going would); no root failure in the log (none; label config)",
    "vllm-cpu-faults/kill-quit-api-at-routes.log": "the API server killed at start-up printed nothing (a silent death: the log just ends, as a start-up still going would); no root failure in the log (none; label api)",
    "vllm-cpu-faults/log-uvicorn-warning-usr1-engine-idle.log": "uvicorn at warning level: no ready line at all, so by the log the engine died in the API's start-up (the labeller marks it unsure); the start-up had reached api (line 61) (api; label runtime)",
    "vllm-cpu-faults/kill9-api-at-import.log": "the API server killed at start-up printed nothing (a silent death: the log just ends, as a start-up still going would); no root failure in the log (none; label container)",
    "vllm-issues/6250.log": "a KeyError ('http_port') in the engine core's KV-connector set-up, from --kv-transfer-config: its frames say the engine (label config, marked unsure: engine defensible)",
    "vllm-issues/6251.log": "a bare 'AssertionError: 32768 is not divisible by 3' (TP 3), no frames or markers: the default, the engine (label config, marked unsure; 1170 and 2742 label the same form weights)",
    "vllm-issues/6255.log": "Ray's report of a worker gone (SYSTEM_ERROR) with no traceback or marker: read by the kill's type (runtime; label engine from the reporter's words)",
    "vllm-issues/6337.log": "an AttributeError naming a layer's missing weight attribute ('ColumnParallelLinear' …) read as the weights (label runtime: it failed on a request)",
    "vllm-cpu-faults/lp-module-missing.log": "a --logits-processors module that is not installed: a package that could not be imported at start-up is the image's (container), whatever layer imported it (label engine, marked unsure)",
    "vllm-cpu-faults/lp-entry-point-import-error.log": "a logits-processor plugin whose module fails to import a name from vLLM: an import failure, the image's (container; label engine, marked unsure)",
    "vllm-cpu-faults/load-format-runai-streamer-not-installed.log": "--load-format runai_streamer without its package, imported through vLLM's lazy placeholder (vllm/utils/import_utils.py) from transformers_utils, not from the model loader's own frame: read as the image's (container; label weights, marked unsure)",
    "vllm-cpu-faults/cli-chat-no-server.log": "the vllm chat client finding no server (httpcore ConnectError), no server log at all: no evidence, the default (runtime; label api, marked unsure)",
    "vllm-cpu-faults/log-configure-off-kill9-engine-inflight.log": "without vLLM's logging the engine's kill leaves a bare 'AsyncLLM output_handler failed.' heading an EngineDeadError traceback: runtime, but the root reported is the EngineDeadError line under that header (the label quotes the header)",
    "vllm-cpu-faults/offline-no-main-guard.log": "an offline script without a __main__ guard: multiprocessing's bootstrapping RuntimeError after the config markers (config; label engine, marked unsure: container defensible)",
    "vllm-cpu-faults/offline-sigkill-script-generating.log": "the offline script SIGKILLed during generate() printed nothing (a silent death: the log just ends); no root failure in the log (none; label runtime)",
    "vllm-cpu-faults/offline-sigterm-script-generating.log": "the offline script SIGTERMed during generate() printed nothing of its own (the log reads as a SIGKILL's); no root failure in the log (none; label runtime, marked unsure)",
    "vllm-cpu-faults/runbatch-output-dir-missing.log": "vllm run-batch writing its results into a missing folder after the batch ran: its markers say the front end's start-up (api; label runtime, marked unsure)",
    "vllm-cpu-faults/sigint-twice-at-load.log": "two SIGINTs at load: KeyboardInterrupt is a stop's, never a root (none; label weights by the stage reached, marked unsure)",
    "vllm-cpu-faults/offline-memcg-oom-prompt-logprobs.log": "stage and root right (the engine core's fatal error after a built engine says its loop ran); an OOM word after the root gives oom_root_cause false where the label says null (the OOM kill is only in the sidecar)",
    "vllm-cpu-faults/api-middleware-fn-raises-on-completions.log": "a middleware that raises on one route: the server answers 500 there and serves the rest, nothing else fails (none; label runtime, marked unsure)",
    "vllm-cpu-faults/api-tool-parser-plugin-missing.log": "a --tool-parser-plugin file that is not there: the import of the parser module fails and is taken as the image's (container; label config with the plugin file's FileNotFoundError as the root, marked unsure)",
    "vllm-cpu-faults/launch-dp-headless-address-unreachable.log": "a headless data-parallel rank whose head is unreachable prints nothing after its launch line and hangs (none; label engine by what it was doing, marked unsure)",
    "vllm-issues/6346.log": "a bare AttributeError from TPU device sorting with no frame or message naming a layer: the engine's set-up by default (label device, marked unsure)",
    "vllm-issues/6352.log": "GPUStack's launcher line (no vllm executable) indented by the paste like the prose above it, so read as code: no root (label container)",
    "vllm-issues/6356.log": "the client's report that the engine core died is the root; gdb's 'Program terminated with signal SIGBUS' of the core dump is printed after it (stage runtime right)",
    "vllm-issues/6360.log": "a CANN kernel rejecting a weight format during profiling, no frame naming a layer: the engine's set-up by default (label device, marked unsure)",
    "vllm-issues/6357.log": "stage and root right; the root's line is the NPU runtime's error code, its 'EL0004: Failed to allocate memory. Possible Cause: Available memory is insufficient' is on the lines below it (oom_root_cause null; label true)",
    "vllm-cpu-faults/hook-eng-dist-init-hang-ready-timeout.log": "distributed init made to hang: the log just stops, the ready timeout never fired and the harness's stop printed nothing (none; label engine by what it was doing, marked unsure)",
    "vllm-cpu-faults/hook-wt-load-model-exit1.log": "the worker os._exit(1)s in load_model before its buffered lines are written: the log shows it dying right after it started, so the markers say the device's set-up (label weights by what it was doing, marked unsure)",
    "vllm-issues/6373.log": "torch_npu's 'The Inner error is reported as above' wrapper is taken as the root; the label takes the CANN line under it ('Memory_Allocation_Failure(EL0004): Failed to allocate memory.'; other labels of the corpus take the wrapper), and no start-up line says the server was serving (engine by default; label runtime from the prose, marked unsure)",
    "vllm-issues/6379.log": "a hand-wrapped quote of UCX's CUDA IPC errors: the UCX ERROR line is the root, its message ('cuMemcpyDtoDAsync_v2 … failed: invalid argument') is on the wrapped next line (stage runtime right)",
    "vllm-issues/6381.log": "three UCX lines quoted alone, no start-up line: the last start-up marker seen places it in the engine's set-up (label runtime from the thread, marked unsure)",
    "vllm-issues/6382.log": "a TypeError in the MTP drafter's dummy run with no start-up line: the engine's set-up by default (label runtime from the prose, marked unsure: the same path runs in warm-up)",
    "vllm-issues/6384.log": "stage engine right (the HCCL communicator that could not be created); the label takes the CANN line 'Bind_Failed(EJ0003)' under torch_npu's RuntimeError as the root",
    "vllm-issues/6385.log": "a P/D KV link failure (llm_datadist LLMException) with no start-up line: the engine's set-up by default (label runtime from the thread, marked unsure)",
    "vllm-cpu-faults/rank-tp1-dist-init-hang-ready-timeout.log": "TP 2 with rank 1's distributed init made to hang: no timeout fired and the log shows no error at all (none; label engine by what it was doing, marked unsure)",
    "vllm-cpu-faults/ctr-tp2-cpu-quota-ready-timeout.log": "start-up crawling under a 1 % CPU quota until the harness's own timeout: no error line at all (none; label engine by what it was doing, marked unsure)",
    "vllm-issues/6605.log": "a data-parallel engine's handshake refusing another engine's configuration ('Configuration mismatch detected for engine 1'), no frame: the engine's set-up by default (label config, marked unsure: config or engine)",
    "vllm-issues/6631.log": "root right (the Ray worker's 'No module named' inside Triton's quoted error); placed by its type in the container, the label says runtime (the failing call was a request's, marked unsure: container arguable)",
    "vllm-issues/6663.log": "three lines: a Triton illegal memory access with nothing saying the server was not yet serving: runtime by its type; the label says engine from the thread's title (during start-up)",
    "vllm-issues/6665.log": "two exception lines quoted in prose: the assert's 'mm_hash=' reads as an option's value (config); the label says runtime from the reporter's words (an embeddings request)",
    "vllm-issues/6666.log": "a cut traceback's RuntimeError naming V0's engine_step in a Task's repr, no frame: the engine's set-up by default (label runtime: the engine step serves requests)",
    "vllm-issues/6700.log": "root right; six lines of a Ray compiled-graph error on a blog page with no layer named: the label's runtime comes from the page's words (the server had been answering), the default says engine",
    "vllm-issues/6704.log": "root right (session 27's fresh excerpt, missed as it came); a one-line NotImplementedError that no MXFP4 MoE backend supports the deployment (a batch-invariance flag on GB200): no frame or layer named, the default says engine, the label config (unsure: engine defensible)",
    "vllm-issues/6709.log": "root right (session 27's fresh excerpt, missed as it came); DeepGEMM's assertion 'Unknown SF transformation' on an sm120 card, one line: no frame, the default says engine, the label device (a kernel the architecture lacks; unsure: weights defensible)",
    "vllm-issues/6942.log": "root right (session 27's fresh excerpt, missed as it came); a trust_remote_code refusal raised while the config is read, its frames in the hub's model loading: weights by the stack, the label config (unsure: weights defensible)",
    "vllm-issues/6956.log": "root right (session 27's fresh excerpt, missed as it came); a FileNotFoundError quoted as a numbered list item in prose: no frame, the default says engine, the label weights (a model file)",
    "vllm-issues/6965.log": "root right (session 27's fresh excerpt, missed as it came); the reporter's sentence quoting the error is the only root; its server words make the default runtime, the label weights",
    "vllm-issues/6966.log": "(session 27's fresh excerpt, missed as it came) fastsafetensors' native 'cuFileBufRegister returned an error = 5016' (no error word the roots know) before 'WorkerProc failed to start': the latter is taken, the default says engine, the label weights",
    "vllm-issues/6968.log": "root right (session 27's fresh excerpt, missed as it came); a FileExistsError in the Run:ai streamer's cache raced by two workers, raised under the model config's set-up: config by the stack, the label weights (a load format)",
    "vllm-issues/6969.log": "(session 27's fresh excerpt, missed as it came) the error quoted inside a prose comment in backticks (an ERROR line's text mid-sentence): no root read out of it (none); the label weights",
    "vllm-issues/6970.log": "(session 27's fresh excerpt, missed as it came) the error quoted in prose ('Here is the error: itsAndBytes load format …', its first letters cut): not an exception's shape, no root (none); the label config",
    "vllm-issues/7007.log": "(session 27's fresh excerpt, missed as it came) 'Failed to import Triton kernels' logged at ERROR by vLLM, which goes on without them: no root (none); the label container (unsure: none defensible)",
    "vllm-issues/7012.log": "root right (session 27's fresh excerpt, missed as it came); a one-line AttributeError of SpeculativeConfig: no frame, the default says engine, the label config",
    "vllm-issues/7022.log": "root right (session 27's fresh excerpt, missed as it came: the cut frame line was taken for the root); a triager's trimmed traceback ending on its raise statement, frames of the hub-kernels integration: no layer named, the default says engine; the label container",
    "vllm-issues/6833.log": "root right (session 27's fresh excerpt, missed as it came); 'DeepGEMM backend is not available or outdated. Please install or update the deep_gemm' read as a missing package (container); the label says engine, the FP8 kernel chosen at start-up (unsure: container defensible)",
    "vllm-repo-logs/7034.log": "stage right; V0's worker header 'Exception in worker VllmWorkerProcess while processing method initialize_cache: CUDA out of memory …' is the root reported, the label takes the typed torch.OutOfMemoryError line under it (other labels take the header: 2555, 2674, 2757, 2937)",
    "vllm-issues/1615.log": "stage right; an apptainer shell transcript whose first failing command is the user's probe 'bash: python3: command not found', read as the root; the label takes the vllm launcher's 'bad interpreter' line two lines later",
    "vllm-repo-logs/7071.log": "Ctrl-C during start-up: the KeyboardInterrupt is in a spawned child's unprefixed traceback and the API server's 'Engine core initialization failed' after it is taken as the root (config by the markers); the label says none (an operator's stop; the harness's sigint-at-engine-init says engine: labels disagree)",
    "vllm-repo-logs/7090.log": "root right (Slurm's 'Detected 8 oom_kill events'); the start-up had shown only its config lines, so the markers say config; the label says weights (host RAM while loading Mixtral, marked unsure)",
    "vllm-repo-logs/7097.log": "root right ('LLVM ERROR: Unsupported rounding mode for conversion.' on a T4): a line only GPU work prints, read as after start (runtime); the label says device (sm_75, as 3716, marked unsure)",
    "vllm-repo-logs/7100.log": "stage right; a Slurm job's output where another program of the job (a data script) crashed first on the half-reinstalled torch ('No module named torch.distributed'); the label takes vLLM's own later '_C.abi3.so: undefined symbol'",
    "vllm-repo-logs/7160.log": "root right; a two-node DGX Spark start-up whose worker's own traceback is not in the file (only the engine core's 'WorkerProc initialization failed' and the API's consequence): the label's weights comes from the repository's verdict document, the log names no layer (default: engine)",
    "vllm-repo-logs/7161.log": "a failure drill: the operator's docker kill of the worker node's container during NCCL's start-up leaves no line of the kill, only the head's wrapper saying the worker is not running: no root found, so none (the label: the stage it reached, engine)",
    "vllm-repo-logs/7184.log": "a worker node's log of a 4-node DGX Spark incident: a custom NCCL's 'NET/IB : … async fatal event: local catastrophic error' WARN (that its IB hot-plug then recovered) is taken as the root, hours before the label's watchdog timeout; no ready line in this node's file, so the WARN's words give engine (label: runtime, it was serving)",
    "vllm-repo-logs/7185.log": "unsure label: a run killed while loading weights with no line of the kill; the label takes the resource tracker's 'leaked semaphore' warning at exit as the root; no root found, so none",
    "vllm-repo-logs/7205.log": "root right ('Value error, World size (3) is larger than the number of available GPUs (1)'): the labels disagree, this one (unsure) says config for a validation error, the tuned excerpts' 'required GPUs exceeds the available GPUs' say device; the message's words give device",
    "vllm-repo-logs/7223.log": "root right ('The supplied chat template string (/nonexistent.jinja) appears path-like, but doesn't exist'): an unsure label, api, where the frames (the argument's check at parse time) give config; earlier labels of this message are split between the two",
    "vllm-repo-logs/7228.log": "stage right; Python's 'During handling of the above exception' chain: transformers' IndexError, then the OSError ('Can't load image processor') its handler raised; the label takes the OSError, the classifier the first, as most tuned labels of such chains do (a config file's JSONDecodeError before 'It looks like the config file … is not a valid JSON file')",
    "vllm-repo-logs/7245.log": "stage right (a start-up that hung after graph capture: 'No available shared memory broadcast block found' every minute to the end); the label takes that INFO line as the root, the classifier reports a hang with no exception (its evidence lines are those), as the tuned hang labels with a null root do",
    "vllm-cpu-faults/s24-kv-space-64-gib-on-23-gib.log": "stage and root right; the KV cache's memory check refusing 64 GiB on a 23 GiB machine (a check, no allocation failed) is not read as an OOM, the label says oom_root_cause true (unsure), as dkr-memory-2g-logs",
    "vllm-cpu-faults/s24-memcg-2g75-batch-endpoint-200k.log": "stage and root right ('Worker proc VllmWorker-0 died unexpectedly'); the label's oom_root_cause true comes from the sidecar's memory cgroup count (oom_kill: 1): the log itself shows no out-of-memory",
    "vllm-cpu-faults/s24b-rank-dp1-engine-sigterm-idle.log": "SIGTERM of data-parallel rank 1's engine core while idle: it shuts down as if asked ('trigger received signal=SIGTERM'), the process manager stops rank 0 too; nothing fails in the log before the harness's kill, so none (the label: runtime, the server could no longer answer)",
    "vllm-cpu-faults/s24b-v010-memcg-1g.log": "root right (the API's 'Engine core initialization failed'); a memory cgroup's OOM kill of the engine core leaves no line: the markers say device was reached, the label engine",
    "vllm-cpu-faults/s24b-v085-chat-template-broken-jinja.log": "a chat template that does not compile: V0's server refuses each chat with a 400 and goes on serving completions; the classifier reads one request refused (none), the label (unsure) says api",
    "vllm-cpu-faults/s24-kill9-engine-at-init-engine-took.log": "stage right; SIGKILL of the engine core at 'init engine … took' leaves no line of the kill: the label takes the worker's 'Parent process exited, terminating worker queues' (a line every normal stop prints too), the classifier the API's 'Engine core initialization failed'",
    "vllm-cpu-faults/ctr-tp2-pids-max-32-startup.log": "pids.max 32: 'RuntimeError: Resource temporarily unavailable' raised in the workers' distributed set-up, whose frames place it in the engine (label container: the pod's limit, marked unsure with engine defensible)",
    "vllm-cpu-faults/s25-args-prefix-hash-xxhash-not-installed.log": "root right (xxhash is required … pip install xxhash); a missing optional package is read as the image's (container), the label says engine by the layer that needed it (unsure: container defensible)",
    "vllm-cpu-faults/s25-cfg-fp8-block-quant-config-on-bf16.log": "root right (Failed to find a kernel that can implement the ScaledMM linear layer); the model's construction frames say weights, the label device (no AMX for the fp8 kernel; unsure: weights and config defensible); 2073's WNA16 twin is labelled weights",
    "vllm-cpu-faults/s25-kill9-api-at-starting-vllm-server.log": "the API server SIGKILLed at 'Starting vLLM server on': the log ends at 'Waiting for application startup.' with no word of a death; read as healthy (label api, its last line as a stand-in root, unsure)",
    "vllm-cpu-faults/s25-kill9-worker-at-initializing-model-took.log": "root right (WorkerProc initialization failed); a silent kill placed where the start-up was last seen (the shard loader at 0 %: weights); the label says engine (a kill in the engine's start-up, unsure: weights defensible)",
    "vllm-cpu-faults/s25-memcg-3g-kv-memory-4g.log": "stage and root right; the memory cgroup's OOM kill of the worker leaves only 'died unexpectedly (exit code: None)': nothing in the log says out of memory, the label's oom_root_cause true comes from the sidecar",
    "vllm-cpu-faults/s25b-dkr-sh-c-split-command.log": "sh -c ran 'vllm' bare: its usage text and exit 0, no error line; read as healthy (label config, the usage line as root, unsure)",
    "vllm-cpu-faults/s25b-rank-dp1-engine-sigstop-serving.log": "a DP rank's engine core SIGSTOPped while serving: nothing in the log until the harness's stop force-kills it; read as healthy (label runtime with the force-kill line as a stand-in root, unsure)",
    "vllm-cpu-faults/s25b-slm-srun-step-time-1.log": "a serving step ended by srun --time: read as the job's end (three real serving jobs that ran into their time limit, 4745, 6211, 7039, are labelled healthy); this label says runtime (unsure)",
    "vllm-cpu-faults/s25b-v010-logging-config-missing.log": "root right (Could not load logging config); raised while vllm is imported, so the image's (container); the label says config (the env var names a missing file; unsure: container defensible)",
    "vllm-cpu-faults/s25b-v085-tp2-bind.log": "root right (_C has no attribute 'init_shm_manager'); an op the installed build lacks is read as the image's (container), the label engine (TP group set-up; unsure: container and device defensible)",
    "vllm-cpu-faults/s25c-bench-latency-input-over-max-len.log": "root right (vllm bench latency's own assert on input + output length); the offline engine's start-up had ended, so the markers say the next stage had begun; the label says config (the benchmark's arguments)",
    "vllm-cpu-faults/s25c-bench-throughput-dataset-missing.log": "root right (FileNotFoundError of the benchmark's dataset); nothing names a layer and the main program's whole stack: the process start (container); the label says config (unsure: the benchmark's input, not a model file)",
    "vllm-cpu-faults/s25c-offline-pooling-runner-generate.log": "an offline script's generate() that vLLM refused (only for generative models) is read as one input refused; the label says config (unsure: runtime and none defensible)",
    "vllm-cpu-faults/s25c-offline-prompt-none-from-csv.log": "an offline script's prompt vLLM refused (None among the strings: Prompt should be a string …) is read as one input refused, healthy; the label says runtime (the script died of it; unsure, none defensible)",
    "vllm-cpu-faults/s25c-rank-dp2-address-not-local.log": "stage right; c10d's first '[E …] [c10d] The client socket has failed to connect to any network address' line is taken, the label the DistNetworkError 300 s later carrying the same message (347's label takes the [E] line: the two conventions differ)",
    "vllm-cpu-faults/s25c-rank-tp1-worker-sigabrt-at-load.log": "root right (WorkerProc initialization failed); rank 1's worker killed silently at 'Starting to load model': placed where the start-up was last seen (weights); the label says engine (unsure: weights defensible)",
    "vllm-cpu-faults/s26-dev-gpu-util-0.97-node-memory.log": "root right (Available memory on node 0 … is less than desired CPU memory utilization); the message names the --gpu-memory-utilization value (config); the label says device (the worker's own memory check in CPUWorker.__init__; unsure: config defensible)",
    "vllm-cpu-faults/s26-dev-sigkill-worker-at-init-device.log": "root right (WorkerProc initialization failed); the worker killed silently in its init_device: placed where the start-up was last seen (device); the label says engine (a kill during the engine's start-up; unsure: device defensible)",
    "vllm-cpu-faults/s26c-bench-serve-no-server.log": "root right (ConnectionRefusedError of vllm bench serve's client); a client with no server in its log: nothing names a layer, the default (engine); the label says api (unsure: the nearest layer)",
    "vllm-cpu-faults/s26c-offline-engine-sigstop-then-ctrl-c.log": "the engine core SIGSTOPped while generating prints nothing; the user's Ctrl-C 45 s later is read as the operator's stop (healthy); the label says runtime with the KeyboardInterrupt as root (unsure)",
    "vllm-cpu-faults/s26c-offline-memcg-script-hoards-memory.log": "stage and root right; the memory cgroup's OOM kill of the worker leaves only 'died unexpectedly (exit code: None)': nothing in the log says out of memory, the label's oom_root_cause true comes from the sidecar",
    "vllm-cpu-faults/s26c-offline-image-to-text-model.log": "an offline script that died of an input or call vLLM refused (the engine still healthy) is read as one input refused, healthy; the label says runtime (unsure: none defensible, as session 18's labellers said)",
    "vllm-cpu-faults/s26c-offline-logit-bias-out-of-vocab.log": "an offline script that died of an input or call vLLM refused (the engine still healthy) is read as one input refused, healthy; the label says runtime (unsure: none defensible, as session 18's labellers said)",
    "vllm-cpu-faults/s26c-offline-lora-request-lora-disabled.log": "an offline script that died of an input or call vLLM refused (the engine still healthy) is read as one input refused, healthy; the label says runtime (unsure: none defensible, as session 18's labellers said)",
    "vllm-cpu-faults/s26c-offline-skip-tokenizer-init-text-prompt.log": "an offline script that died of an input or call vLLM refused (the engine still healthy) is read as one input refused, healthy; the label says runtime (unsure: none defensible, as session 18's labellers said)",
    "vllm-cpu-faults/s26c-offline-start-profile-unconfigured.log": "root right (Profiling is not enabled); the offline engine had started, so the markers say the next stage had begun (api); the label says runtime (a call after start-up; unsure)",
    "vllm-cpu-faults/s26c-runbatch-completions-lines.log": "root right (pydantic's field line); pydantic's frames say the config; the label says runtime (run-batch's input file refused after start-up; unsure)",
    "vllm-cpu-faults/s26c-runbatch-input-url-no-network.log": "stage right; aiohttp's ClientConnectorDNSError is taken, the label the socket.gaierror under it (the same failure, one chained to the other)",
    "vllm-cpu-faults/s26d-dkr-entrypoint-model-env-unset.log": "root right (HFValidationError of an empty model name); the hub's message reads as the weights; the label says config (unsure: weights defensible)",
    "vllm-cpu-faults/s26d-slm-scancel-int-at-weights-loaded.log": "a user's scancel --signal=INT during the start-up: the engine core's 'trigger received signal=SIGINT' and the start-up failure after it are read as a kill of the start-up (weights, where it was); the label says none (an operator's stop; unsure: engine defensible)",
}


def _param(case: Case):
    marks = [pytest.mark.xfail(strict=True, reason=KNOWN_MISSES[case.id])] if case.id in KNOWN_MISSES else []
    ident = ("shared/" if case.root == SHARED_CORPUS else "") + case.id
    return pytest.param(case, marks=marks, id=ident)


ALL = [_param(c) for c in SHARED + TUNED]


def _root_ok(case: Case, result) -> bool:
    want, fe = case.label["first_exception"], result.first_exception
    if case.label["stage"] == "none":
        return fe is None
    if want is None:
        return True
    return fe is not None and (want in fe.line or (fe.context is not None and want in fe.context))


def test_every_labelled_log_is_a_case(shared) -> None:
    for folder in ("vllm-cpu", "vllm-issues"):
        logs = {p.name for p in (shared / "corpus" / folder).glob("*.log")}
        labelled = {c.label["file"] for c in SHARED if c.folder == folder}
        assert logs and logs == labelled, f"{folder}: logs without labels or labels without logs"
    assert all(c.path.is_file() for c in TUNED), "a tuned label names a file that is not there"


@pytest.mark.parametrize("case", ALL)
def test_corpus_log_matches_label(case: Case) -> None:
    result = classify_text(case.text())
    label = case.label
    assert result.failed_stage == label["stage"], label["notes"]
    assert _root_ok(case, result), label["notes"]
    if label["stage"] == "none":
        assert result.signature == ""
    elif result.first_exception is not None:
        assert result.first_exception.line in result.first_exception.stack
        assert result.signature.startswith(label["stage"] + "|")
        assert result.evidence is not None and result.confidence in ("high", "medium", "low")
    assert result.oom_root_cause == label["oom_root_cause"]


@pytest.mark.parametrize("case", SHARED, ids=[c.id for c in SHARED])
def test_corpus_events_agree_with_result(case: Case) -> None:
    events: list = []
    c = Classifier(run="r1", emit=events.append)
    c.feed(case.text())
    result = c.finish()
    found = [e for e in events if isinstance(e, ExceptionFound)]
    assert len(found) == (0 if result.first_exception is None else 1), "ExceptionFound is emitted once, for the root"
    if found:
        assert found[0].line == result.first_exception.line
        assert found[0].stage == result.failed_stage
        assert found[0].signature == result.signature
    stages = [(e.stage, e.line, e.log_time) for e in events if isinstance(e, StageReached)]
    assert stages == [tuple(s) for s in result.stages]
    assert isinstance(events[-1], RunClassified) and events[-1].failed_stage == result.failed_stage
    assert all(e.run == "r1" for e in events)


# Issue 13's bar on the held-out fifth is stage >= 95 %, root >= 90 %; it is NOT met yet. This test
# holds the floor that was measured, so a change that loses held-out logs fails; raise it when the
# score rises. Measured 2026-12-01: stage 46/54, root 50/54. 2026-12-04: 40 new excerpts (241-280)
# were labelled and added; the hash put 14 of them in the held-out part, which the classifier had
# never seen: 11/14 stage right. The old 54 still score 46/54 after the rule changes, the whole
# held-out part 57/68 stage (83.8 %), 64/68 root (94.1 %). Then 17 more (281-297, 4 held out, all
# 4 right) and rules from the tuned ones: 61/72 stage (84.7 %), 69/72 root (95.8 %). The floor
# follows the last measurement. Session 5: 60 more (298-382, 11 held out) and the rules fixed from the
# tuned ones: 71/83 stage (85.5 %), 78/83 root (94.0 %) — the root floor goes DOWN with them (the
# new held-out logs brought misses no rule was tuned for; that is what the floor is for).
# Then 26 more (400-487, 4 held out: 1/4 stage right, 3/4 root) and the rules from their tuned
# misses: the old 83 at 71 stage / 79 root, all 87 at 72/87 stage (82.8 %), 82/87 root (94.3 %).
# Then 2 + 7 more excerpts (520-566, 1 held out) and 30 more complete vllm-cpu runs (8 held out:
# 7/8 stage, 7/8 root before and after), rules from the tuned misses: 80/96 stage (83.3 %), 90/96 root
# (93.8 %).
# Then 25 excerpts from other projects' threads quoting vLLM logs (600-649, 5 held out: 1/5 stage,
# 4/5 root, unchanged by the rules from the tuned 20): 81/101 stage (80.2 %), 94/101 root (93.1 %).
# Then 9 from public pages (720-728, 3 held out: 1/3 stage, 1/3 root): 82/104 stage (78.8 %), 95/104
# root (91.3 %).
# Then 16 from 2025-2026 threads (680-695, 4 held out: 1/4 stage, 3/4 root): 83/108 stage (76.9 %),
# 98/108 root (90.7 %).
# Sixth session: three weak-evidence readings (engine/worker process, a stuck shards bar, a cut
# traceback) first: 84/108 stage, 98/108 root. Then 30 fresh excerpts (760-884, 9 held out: 5/9 stage,
# 7/9 root, scored before and unchanged after the rules from the tuned 21): 89/117 stage (76.1 %),
# 105/117 root (89.7 %).
# Then 28 more (910-980, 5 held out: 3/5 stage, 4/5 root, scored with this session's rules before any rule saw
# them; the tuned 23: 18/23 stage, 22/23 root) and the rules from their tuned misses: 93/122 stage (76.2 %),
# 109/122 root (89.3 %).
# Then 32 more (1000-1090, 4 held out: 2/4 stage, 3/4 root, and ONE held-out `none` log given an
# exception, all scored with this session's rules before any rule saw them; the tuned 28: 18/28 stage,
# 22/28 root) and the rules from their tuned misses: 95/126 stage (75.4 %), 112/126 root (88.9 %). The
# held-out part is not opened, so why that `none` log gets an exception is not known here: the goal
# (never) is not met, and the ceiling below records it rather than hiding it.
# Seventh session: 291 fresh excerpts (58 held out): 141/184 stage (76.6 %), 162/184 root (88.0 %), the same
# one `none` log given an exception. Eighth session: 248 fresh excerpts (49 held out: 29/49 stage, 40/49 root
# when they came, 32/49 and 42/49 after the rules made from the tuned 199). On the 184 held-out logs of the
# session's start: 141 -> 144 stage, 162 -> 165 root, `none` logs with an exception 1 -> 0. On all 233:
# 176/233 stage (75.5 %), 207/233 root (88.8 %), and TWO `none` logs given an exception, both fresh this
# session (a Slurm job's `jq: error:` line; a chat-template handler's traceback whose location a terminal's
# escapes split), seen in the end-of-session miss list, not changed: the ceiling records them.
# Session 9: 35 fresh held-out logs came with 12 batches (stage 22/35, root 27/35 when they came), two of
# them `none` logs given an exception (one of a batch gathered for `none` logs and short pastes, one of a
# batch gathered for `none` look-alikes), counted in aggregate only, their files not opened. On all 268:
# stage 203 (75.7 %), root 233 (86.9 %), four `none` logs with an exception. On the 194 held-out excerpts
# the session found: stage 140 -> 145, root 169 -> 168, none with an exception 2 -> 2. The root floor is
# the new measurement, rounded down: the fresh logs are harder than the old ones, not the rules worse.
# Third round: 43 more fresh held-out logs read from vLLM issue bodies (stage 28/43, root 33/43, three
# `none` logs given an exception; aggregate only). On all 311: stage 230 (74.0 %), root 266 (85.5 %),
# seven `none` logs with an exception; on the 229 held-out excerpts before them the third round's rules
# changed nothing (167 / 195 / 4 before and after). Floors and ceiling are that measurement.
# Fourth round: 8 more fresh held-out logs (stage 6/8, root 4/8); on all 319: stage 236 (74.0 %), root
# 270 (84.6 %), seven `none` logs with an exception.
# Session 10: 24 fresh held-out logs came with 9 batches (stage 15/24, root 19/24 when they came), one of
# them a `none` log given an exception (a batch of V0-era logs; aggregate only, its file not opened). On all
# 343, after the session's rules so far: stage 253 (73.8 %), root 289 (84.3 %), eight `none` logs with an
# exception; the rules made from the tuned misses changed none of the 343 (253/289/8 before and after).
# Rounds 7-10 of session 10: 41 more fresh held-out logs (stage 29/41, root 35/41 when they came), three of
# them `none` logs given an exception, all three in one batch of commit messages from vLLM's forks that
# quote errors in prose (aggregate only, their files not opened; the labeller had flagged six of that
# batch's 21 as prose or CI output before any classifier ran, and they were kept). On all 384: stage 285
# (74.2 %), root 326 (84.9 %), ten `none` logs with an exception. The ceiling is that measurement.
# Round 11: 17 more fresh held-out logs from the platform plugins' commit messages (mostly one- to
# four-line quotes in a commit's prose, whose stage only the fix tells; stage 5/17, root 8/17 when they
# came; aggregate only). On all 407, after the rules made from round 11's tuned misses: stage 297
# (73.0 %, just under 0.73), root 342 (84.0 %), nine `none` logs with an exception. The stage floor is
# that measurement, rounded down.
# Round 13: 37 more fresh held-out logs (threads of projects beside vLLM, committed log files, job
# outputs and notebook cells, forum and model pages; aggregate only: stage 29/37, root 31/37 when they
# came). One of them, a healthy notebook run, was given an exception as it came: the ceiling is the new
# measurement (11), not a rule's regression. On all 479: stage 353 (73.7 %), root 410 (85.6 %).
# Sessions 14 and 15: 7 + 9 more fresh held-out logs (aggregate only: 6/7 and 7/9 stage when they came) and
# the rules made from the tuned misses: on all 495, stage 375 (75.8 %), root 428 (86.5 %), eleven `none`
# logs with an exception. The floor is that measurement, rounded down.
# Session 16: 31 more fresh held-out logs (aggregate only, as they came: 20/31 stage, 28/31 root; one fresh
# held-out `none` log of the 34 new vllm-cpu runs was given an exception: twelve) and the rules made from the
# tuned misses: on all 526, stage 402 (76.4 %), root 463 (88.0 %).
# Session 17: 21 more fresh held-out logs, all new vllm-cpu runs in two rounds (aggregate only, as they came:
# 17/21 stage, 21/21 root); on the 526 before them the session's rules moved stage 402 -> 401 (the
# kill-at-the-last-line rule: one held-out stage lost, counted per commit) and root 463 -> 466. On all 547:
# stage 418 (76.4 %), root 487 (89.0 %), twelve `none` logs with an exception.
# Session 18: 24 more fresh held-out logs (one excerpt, 23 new vllm-cpu runs, offline LLM(...) scripts among
# them; aggregate only, scored as they came with the rest of their batches), three of them healthy offline runs
# whose script ended on a refused input or its own code and which were given an exception: fifteen. On the 547
# before them the session's rules moved stage 418 -> 419, root and none unchanged (487 / 12; counted per commit; two rules tried lost a
# held-out stage each: one left out, one reworded before it landed). On all 571: stage 433 (75.8 %), root 504 (88.3 %),
# fifteen `none` logs with an exception. The stage floor is that measurement, rounded down.
# Then 6 more fresh held-out logs of a third round (offline scripts), five of them healthy runs (labelled `none`,
# several marked unsure) whose script ended on an input vLLM refused or on its own misuse of vLLM's API, and
# which were given an exception as they came. On all 577:
# stage 434 (75.2 %), root 505 (87.5 %), twenty `none` logs with an exception. The root floor is that
# measurement, rounded down.
# Session 19: 29 more fresh held-out logs (4 + 5 excerpts, 20 new vllm-cpu runs of three rounds: the API layer and
# launch options, failures injected inside vLLM's own code, several ranks with one failing; aggregate only, as
# they came: stage 29/29, root 28/29, none given an exception). On the 577 before them the session's rules moved
# stage 434 -> 435 (the communicator rule; counted per commit), root 505 and twenty `none` logs unchanged. On
# all 606: stage 464 (76.6 %), root 533 (88.0 %), twenty `none` logs with an exception. Then 3 more fresh
# held-out logs (a fourth vllm-cpu round: a container's limits on TP 2 / DP 2; 2/3/0 as they came) and the
# model-info cache rule: on the 577, stage 435 -> 438, root 505 -> 508, `none` with an exception 20 -> 19; on
# all 609: stage 469 (77.0 %), root 539 (88.5 %), nineteen. Floors unchanged: the stage floor rises to 0.76
# only when a session's rules, not its fresh logs, carry it there.
# Session 20: on the 609 held-out logs it started with, its rules moved stage 469 -> 473 (77.7 %), root 539 -> 543
# (89.2 %), `none` logs with an exception 19 -> 15 (an offline call vLLM refused, the exceptions chained before a
# refusal, vLLM's client errors; counted per commit). Then 26 fresh held-out logs (excerpts and two vllm-cpu rounds:
# torch.compile and the C++ toolchain, remote-code tokenizers; 25/24/0 as they came). On all 635: stage 498
# (78.4 %), root 567 (89.3 %), fifteen. The rules carried the stage above 0.77: that is the floor now; the root
# floor rises to 0.88, the ceiling falls to fifteen.
# Session 21: on the 635 held-out logs it started with, its rules moved stage 498 -> 500 (78.7 %), root 567 and
# fifteen unchanged. Then 16 fresh held-out logs (excerpts; Slurm batch jobs; vLLM 0.11.0 runs: 12/14/0 as they came).
# On all 651: stage 512 (78.6 %), root 581 (89.2 %), fifteen. The rules carried the stage above 0.78: the floor now.
# Session 22: 27 fresh held-out logs (23/26/0 as they came); on all 678: 535 / 607 / fifteen. Session 23: 8 fresh
# held-out logs, excerpts and a new folder of logs committed to public repositories (5/4/1 as they came: one
# healthy committed log given an exception); then 9 more (7060-7106's held-out ones: 7/8/1 as they came). On all
# 695: stage 549 (79.0 %), root 619 (89.1 %), seventeen: the ceiling is what was measured on them.
# Session 26: its rules changed no verdict of the 738 held-out logs it started with (589 / 659 / seventeen); 17 fresh
# held-out vllm-cpu runs (s26: 5/5/0, s26b: 5/5/0, s26c: 2/3/0, s26d: 1/1/1 as they came: a Slurm or Docker run
# labelled healthy given an exception). On all 755: stage 602 (79.7 %), root 673 (89.1 %), eighteen: the ceiling is
# what was measured on them.
# Session 27: 28 fresh held-out excerpts (21/24/0 as they came). On all 783: the session's start code (79edb10)
# 623 / 697 / eighteen, its end code 625 / 699 / eighteen (the package installer's failure as the container's root
# moved two): stage 79.8 %, root 89.3 %.
# Session 28: 49 fresh held-out excerpts (35/41/0 as they came). On all 832: the session's start code (fe3909a)
# 660 / 740 / eighteen, its end code 662 / 742 / eighteen (one of the two, vllm-issues 7368, moved by Ray's
# autoscaler's error as the device's root, a form seen by mistake while the rule was written): stage 79.6 %, root
# 89.2 %.
# Session 29: 40 fresh held-out excerpts in three rounds (15/18/0, 15/14/1 and 1/1/0 as they came: one healthy excerpt
# given an exception, which raises the ceiling to nineteen; it was measured, not tuned). On all 872: the session's start
# code (453c788) 693 / 775 / nineteen, its end code 694 / 776 / nineteen (a request handler's report that the engine
# was dead under it, read as the engine's death): stage 79.6 %, root 89.0 %.
HELD_OUT_FLOOR = {"stage": 0.78, "root": 0.88}
HELD_OUT_NONE_WITH_EXCEPTION_CEILING = 19


def test_held_out_part_holds_its_measured_floor() -> None:
    """The held-out fifth, scored in aggregate; only counts are ever printed."""
    held = held_out_cases()
    assert len(held) >= 40, "the repository corpus lost its held-out part"
    stage = root = none_with_exception = 0
    for case in held:
        result = classify_text(case.text())
        stage += result.failed_stage == case.label["stage"]
        root += _root_ok(case, result)
        none_with_exception += case.label["stage"] == "none" and result.first_exception is not None
    n = len(held)
    summary = (
        f"held-out: {n} logs, stage {stage}/{n}, root {root}/{n}, none logs with an exception {none_with_exception}"
    )
    assert stage >= HELD_OUT_FLOOR["stage"] * n and root >= HELD_OUT_FLOOR["root"] * n, summary
    assert none_with_exception <= HELD_OUT_NONE_WITH_EXCEPTION_CEILING, summary


def test_vllm_cpu_timeline_is_in_startup_order() -> None:
    result = classify_text((SHARED_CORPUS / "vllm-cpu" / "01-baseline-full-session.log").read_text())
    assert [s.stage for s in result.stages] == ["container", "config", "device", "weights", "engine", "api", "runtime"]
    lines = [s.line for s in result.stages]
    assert lines == sorted(lines)
    assert result.stages[1].time == "11-30 03:29:01"
    assert result.failed_stage == "none"
