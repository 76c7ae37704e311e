package workload

import (
	"fmt"
	"math/rand/v2"
	"net/http"
)

// Op is one operation of a workload: one request a caller wants to succeed.
type Op struct {
	// Tenant is the upstream account the request goes to; it is the Host of
	// the request's URL.
	Tenant string
	// Method and Path are the request's.
	Method string
	Path   string
	// Body is the request's JSON body; nil for none. Every write carries a
	// body of its own, so that the simulator counts a write sent twice as a
	// duplicate.
	Body []byte
}

// URL returns the op's absolute URL: the tenant is the host.
func (o Op) URL() string { return "http://" + o.Tenant + o.Path }

// Endpoint is a kind of request a workload draws from.
type Endpoint struct {
	// Method is the request method.
	Method string
	// Path returns the request's path for issue key, project id and
	// sequence number n (unique within the workload).
	Path func(issue string, project, n int) string
	// Body returns the request's body for the same arguments; nil means
	// the request has none.
	Body func(issue string, project, n int) []byte
	// Weight is the endpoint's share of the workload, relative to the
	// others' weights.
	Weight int
}

// Jira is a dozen Jira Cloud REST endpoints in the proportions of a typical
// integration: mostly reads, with issue updates, comments and creations.
func Jira() []Endpoint {
	get := func(w int, path func(issue string, project, n int) string) Endpoint {
		return Endpoint{Method: http.MethodGet, Path: path, Weight: w}
	}
	return []Endpoint{
		get(20, func(k string, _, _ int) string { return "/rest/api/3/issue/" + k }),
		get(10, func(_ string, p, n int) string {
			return fmt.Sprintf("/rest/api/3/search?jql=project%%3D%d&startAt=%d", p, n%500)
		}),
		get(8, func(_ string, p, _ int) string { return fmt.Sprintf("/rest/api/3/project/%d", p) }),
		get(8, func(k string, _, _ int) string { return "/rest/api/3/issue/" + k + "/comment" }),
		get(6, func(k string, _, _ int) string { return "/rest/api/3/issue/" + k + "/transitions" }),
		get(5, func(_ string, p, _ int) string { return fmt.Sprintf("/rest/api/3/user?accountId=%d", p) }),
		get(4, func(_ string, _, _ int) string { return "/rest/api/3/myself" }),
		get(4, func(_ string, _, _ int) string { return "/rest/api/3/field" }),
		get(3, func(_ string, _, _ int) string { return "/rest/api/3/priority" }),
		{Method: http.MethodPut, Weight: 8,
			Path: func(k string, _, _ int) string { return "/rest/api/3/issue/" + k },
			Body: func(k string, _, n int) []byte {
				return fmt.Appendf(nil, `{"fields":{"summary":"%s update %d","labels":["heed-%d"]}}`, k, n, n)
			}},
		{Method: http.MethodPost, Weight: 6,
			Path: func(k string, _, _ int) string { return "/rest/api/3/issue/" + k + "/comment" },
			Body: func(k string, _, n int) []byte {
				return fmt.Appendf(nil, `{"body":{"type":"doc","version":1,"content":[{"type":"paragraph","content":[{"type":"text","text":"comment %d on %s"}]}]}}`, n, k)
			}},
		{Method: http.MethodPost, Weight: 3,
			Path: func(string, int, int) string { return "/rest/api/3/issue" },
			Body: func(_ string, p, n int) []byte {
				return fmt.Appendf(nil, `{"fields":{"project":{"id":"%d"},"summary":"created %d","issuetype":{"name":"Task"}}}`, p, n)
			}},
	}
}

// Workload is a deterministic list of operations and the number of workers
// that run them. The zero Workload is 200 operations of the [Jira] mix over
// 2 tenants, run by 16 workers.
type Workload struct {
	// Tenants is the number of tenants the operations are spread over.
	// Zero means 2.
	Tenants int
	// Ops is the number of operations. Zero means 200.
	Ops int
	// Workers is how many operations run at once. Zero means 16.
	Workers int
	// Seed seeds the choice of operations: one seed, one list.
	Seed int64
	// Endpoints are drawn from by weight. Nil means [Jira].
	Endpoints []Endpoint
	// Issues is how many distinct issues each tenant's requests name. Zero
	// means 100.
	Issues int
	// Projects is how many distinct projects each tenant has. Zero means 5.
	Projects int
	// TenantName names tenant i. Nil means "tenant-a", "tenant-b", ...
	// followed by ".jira.test".
	TenantName func(i int) string
}

// NumWorkers returns the number of workers, defaults applied.
func (w *Workload) NumWorkers() int { return or(w.Workers, 16) }

// NumOps returns the number of operations, defaults applied.
func (w *Workload) NumOps() int { return or(w.Ops, 200) }

func or(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// TenantNames returns the names of the workload's tenants.
func (w *Workload) TenantNames() []string {
	names := make([]string, or(w.Tenants, 2))
	for i := range names {
		if w.TenantName != nil {
			names[i] = w.TenantName(i)
		} else {
			names[i] = defaultTenant(i)
		}
	}
	return names
}

func defaultTenant(i int) string {
	s := ""
	for {
		s = string(rune('a'+i%26)) + s
		if i < 26 {
			break
		}
		i = i/26 - 1
	}
	return "tenant-" + s + ".jira.test"
}

// Items returns the workload's operations, the same for the same Workload.
func (w *Workload) Items() []Op {
	eps := w.Endpoints
	if eps == nil {
		eps = Jira()
	}
	total := 0
	for _, e := range eps {
		total += max(e.Weight, 0)
	}
	if total == 0 {
		return nil
	}
	tenants := w.TenantNames()
	issues, projects := or(w.Issues, 100), or(w.Projects, 5)
	seed := uint64(w.Seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x5deece66d))
	ops := make([]Op, w.NumOps())
	for n := range ops {
		pick := rng.IntN(total)
		var e *Endpoint
		for i := range eps {
			if pick -= max(eps[i].Weight, 0); pick < 0 {
				e = &eps[i]
				break
			}
		}
		p := rng.IntN(projects)
		issue := fmt.Sprintf("P%d-%d", p+1, 1+rng.IntN(issues))
		project := 10000 + p
		op := Op{Tenant: tenants[rng.IntN(len(tenants))], Method: e.Method, Path: e.Path(issue, project, n)}
		if e.Body != nil {
			op.Body = e.Body(issue, project, n)
		}
		ops[n] = op
	}
	return ops
}
