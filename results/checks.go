package results

// Check is one line of how a scenario's part proved itself on before
// anything was measured (a policy enforcing, proxies answering 200 and
// 403, a tuning read back): written by the part that made it, shown by
// the report beside the scenario as "Label: Text".
type Check struct {
	Part  string `json:"part"`  // the scenario part, "policy-1000", "cc-bbr"
	Label string `json:"label"` // what was checked, "L3/L4 policy, enforcement checked before measuring"
	Text  string `json:"text"`  // what was found
}
