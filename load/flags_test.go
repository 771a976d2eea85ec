package load

import "flag"

var agentsFlag = flag.Int("agents", 0, "TestMemory_ManyAgents: agents to run (0: skip)")
