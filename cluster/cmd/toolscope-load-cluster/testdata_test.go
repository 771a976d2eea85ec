package main

// small is the end-to-end tests' scenario: 3 agents with 2 sub-agents
// each (denied the broken tool), 4 turns of 3 calls: 108 calls, broken's
// failing and slow's timing out by construction.
const small = `{
  "name": "small", "seed": 3,
  "agents": {"count": 3, "subAgents": 2, "depth": 1, "levels": [{}, {"deny": ["broken"]}]},
  "tools": [
    {"name": "ok", "mode": "parallel", "latency": {"kind": "uniform", "min": "0s", "max": "1ms"}, "outputBytes": 100},
    {"name": "broken", "mode": "exclusive", "latency": {"kind": "constant", "value": "0s"}, "failureRate": 1},
    {"name": "slow", "mode": "by-argument", "parallelFraction": 0.5,
     "latency": {"kind": "constant", "value": "0s"}, "timeoutRate": 1, "timeout": "5ms"}
  ],
  "turns": {"perAgent": 4, "callsPerTurn": {"min": 3, "max": 3}},
  "load": {"model": "closed"}
}`
