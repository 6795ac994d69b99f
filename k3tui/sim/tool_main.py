"""Entry of the simulated host's fake tools: ``python -S tool_main.py ROOT CTX TOOL ARGS…``.

Run as a script (no site, no third-party imports) so a probe costs a few milliseconds.
"""

import os
import sys

sys.path[0] = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from k3tui.sim.tools import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
