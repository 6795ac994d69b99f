"""Multi-node deployments (issue 9): a deployment is a group of hosts.

8x GB300 is often two 4-GPU aarch64 trays in one NVLink domain; production runs many such
deployments. This package works on groups of hosts:

- :mod:`.inventory` — TOML inventory files: named groups, SSH options, head/worker roles.
- :mod:`.freeze` — fleet freeze: bounded concurrency, per-host deadlines, unreachable hosts
  reported (not fatal), progress per host, clock skew and UTC offset kept per node.
- :mod:`.compare` — the odd-node-out table and sentences ("node b runs driver 575 while a runs 580").
- :mod:`.timeline` — every node's log on one clock-corrected timeline; the deployment's first
  root exception and the node it came from.
- :mod:`.launch` — multi-node launch for the ladder (head + headless workers, each a detached run).
- :mod:`.cli` — what ``freeze``/``check``/``ladder`` call for ``--inventory`` and groups.

Core: never imports a UI toolkit.
"""
