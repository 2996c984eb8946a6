"""The Store port split by concern: each module holds one small Protocol (and the values it
trades in); `bridge.store.base.Store` is composed of them all.

| module | what it keeps |
| --- | --- |
| `requests` | requests and their state changes (create, read, compare-and-set, claims) |
| `search` | lists, search and counts over requests |
| `audit` | the events of a request |
| `posts` | the copies of a request on channels |
| `outbox` | outcomes waiting for their write-back |
| `votes` | quorum votes |
| `kv` | a small key/value space for adapters |
| `timers` | what the scheduler arms |
| `retention` | pruning closed requests |
| `leads` | roles only one replica may hold |
| `grants` | standing approvals (read on every decision) |
"""
