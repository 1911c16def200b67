package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/ticketd/ticketd/store"
)

// endpointJSON is one down period of a model endpoint in a night, as the circuit breaker
// saw it: "endpoint X down since T, last error E".
type endpointJSON struct {
	Endpoint  string    `json:"endpoint"`
	BaseURL   string    `json:"base_url"`
	DownSince time.Time `json:"down_since"`
	UpAt      time.Time `json:"up_at,omitzero"` // zero: still down when the night's records end
	LastError string    `json:"last_error"`
	Probes    int       `json:"failed_probes"`
}

// downPeriods folds a night's endpoint events into down periods.
func downPeriods(evs []store.EndpointEvent) []endpointJSON {
	var out []endpointJSON
	open := map[string]int{} // endpoint -> index in out of its open period
	for _, e := range evs {
		i, isOpen := open[e.Endpoint]
		switch {
		case e.Down && !isOpen:
			open[e.Endpoint] = len(out)
			out = append(out, endpointJSON{Endpoint: e.Endpoint, BaseURL: e.BaseURL, DownSince: e.Since, LastError: e.LastError})
		case e.Down:
			out[i].LastError = e.LastError
			out[i].Probes++
		case isOpen:
			out[i].UpAt = e.At
			delete(open, e.Endpoint)
		}
	}
	return out
}

// addEstimates fills the figures the store's Stats leaves to its own tables: how much
// rests on estimated usage, what the provider reported, and the endpoint health of a run.
func addEstimates(ctx context.Context, s *store.Store, runID int64, sj *statsJSON) error {
	u, err := s.UsageEstimates(ctx, runID)
	if err != nil {
		return err
	}
	sj.EstimatedCalls, sj.EstimatedCostUSD, sj.ProviderCostUSD = u.EstimatedCalls, u.EstimatedUSD, u.ProviderUSD
	sj.Endpoints = []endpointJSON{}
	if runID != 0 {
		evs, err := s.EndpointEvents(ctx, runID)
		if err != nil {
			return err
		}
		sj.Endpoints = downPeriods(evs)
	}
	return nil
}

// costCell shows a scope's cost with its estimated part marked; total says usd is the
// scope's whole cost (else a ratio of it, marked only as resting on estimates).
func costCell(usd float64, st statsJSON, total bool) string {
	out := fmtCost(usd, st.CostUnknown)
	switch {
	case st.EstimatedCostUSD <= 0:
	case st.EstimatedCostUSD >= st.CostUSD-1e-12:
		out += " (estimated)"
	case total:
		out += fmt.Sprintf(" (~$%.4f estimated)", st.EstimatedCostUSD)
	default:
		out += " (includes estimates)"
	}
	return out
}

// tokensCell shows a token figure, marked when some calls' usage was estimated.
func tokensCell(n int64, st statsJSON) string {
	if st.EstimatedCalls > 0 {
		return "~" + fmtTokens(n)
	}
	return fmtTokens(n)
}

// printHealth writes the nights' endpoint down periods and the estimate footnote.
func printHealth(w io.Writer, rep statsReport) {
	type night struct {
		run *store.Run
		st  statsJSON
	}
	var nights []night
	if rep.Run != nil {
		nights = append(nights, night{rep.Run, rep.statsJSON})
	}
	for i := range rep.Nights {
		nights = append(nights, night{&rep.Nights[i].Run, rep.Nights[i].statsJSON})
	}
	estimated := rep.EstimatedCalls > 0
	for _, n := range nights {
		estimated = estimated || n.st.EstimatedCalls > 0
		for _, p := range n.st.Endpoints {
			state := "still down when the night ended"
			if !p.UpAt.IsZero() {
				state = "up again at " + fmtTime(p.UpAt)
			}
			fmt.Fprintf(w, "run %d: endpoint %s (%s) down since %s, last error: %s; %s\n",
				n.run.ID, p.Endpoint, p.BaseURL, fmtTime(p.DownSince), p.LastError, state)
		}
	}
	if estimated {
		fmt.Fprintf(w, "~ estimated: some servers sent no usage; those calls' tokens are ceil(bytes/4) of request and answer and their cost is priced from that\n")
	}
}
