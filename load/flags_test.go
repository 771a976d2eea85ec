package load

import "flag"

var (
	agentsFlag     = flag.Int("agents", 0, "TestMemory_ManyAgents: agents to run (0: skip)")
	overheadRounds = flag.Int("overhead-rounds", 0, "TestOverhead_Interleaved: rounds to measure (0: skip)")
)
