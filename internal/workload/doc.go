// Package workload runs one workload of API calls through several clients,
// each against a simulated rate-limited server ([sim.Server]), and measures
// what each did by the server's ground truth: time against the ideal time
// at the allowed rate, requests sent, 429s, requests sent while blocked,
// duplicate writes, operations completed, failed and unfinished, an
// efficiency that counts completed operations only, and the share of the
// allowed steady rate used. The clients run side by side, each against a
// server of its own, so that they share the machine but not the limit.
// [Table] prints the results; [Chart] draws each client's sent rate over
// time against the allowed rate, and its 429s and sends into blocks, as SVG.
//
// heed demo and the goodput benchmarks in bench/ are built on it:
//
//	r := &workload.Run{Workload: workload.Workload{Ops: 500}, Sim: sim.Config{Scale: 0.1}}
//	results := r.Start(ctx)
//
// Run works in real time, or on virtual time inside a testing/synctest
// bubble, where minutes of traffic take milliseconds.
package workload
