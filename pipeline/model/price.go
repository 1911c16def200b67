package model

import (
	"fmt"
	"maps"
)

// defaultPrices holds OpenAI's published standard-tier prices (USD per million tokens)
// and output limits. OpenAI bills cache writes as ordinary input, so CacheWrite is left 0
// (billed at Input).
var defaultPrices = map[string]Price{
	"gpt-4.1":      {Input: 2.00, CachedInput: 0.50, Output: 8.00, MaxOutput: 32768},
	"gpt-4.1-mini": {Input: 0.40, CachedInput: 0.10, Output: 1.60, MaxOutput: 32768},
	"gpt-4.1-nano": {Input: 0.10, CachedInput: 0.025, Output: 0.40, MaxOutput: 32768},
	"gpt-4o":       {Input: 2.50, CachedInput: 1.25, Output: 10.00, MaxOutput: 16384},
	"gpt-4o-mini":  {Input: 0.15, CachedInput: 0.075, Output: 0.60, MaxOutput: 16384},
	"o3":           {Input: 2.00, CachedInput: 0.50, Output: 8.00, MaxOutput: 100000},
	"o4-mini":      {Input: 1.10, CachedInput: 0.275, Output: 4.40, MaxOutput: 100000},
	"gpt-5":        {Input: 1.25, CachedInput: 0.125, Output: 10.00, MaxOutput: 128000},
	"gpt-5-mini":   {Input: 0.25, CachedInput: 0.025, Output: 2.00, MaxOutput: 128000},
	"gpt-5-nano":   {Input: 0.05, CachedInput: 0.005, Output: 0.40, MaxOutput: 128000},
}

// DefaultPrices returns a copy of the built-in price table for common OpenAI models.
func DefaultPrices() map[string]Price {
	return maps.Clone(defaultPrices)
}

// Cost is the price of one call in USD.
//
// Uncached prompt tokens (PromptTokens - CachedTokens - CacheWriteTokens, never below
// zero) are billed at Input, cached tokens at CachedInput, cache writes at CacheWrite,
// and completion tokens, reasoning included, at Output. A zero CachedInput or CacheWrite
// means "no separate rate known" and bills those tokens at Input.
func Cost(p Price, u Usage) float64 {
	cachedRate := p.CachedInput
	if cachedRate == 0 {
		cachedRate = p.Input
	}
	writeRate := p.CacheWrite
	if writeRate == 0 {
		writeRate = p.Input
	}
	uncached := max(u.PromptTokens-u.CachedTokens-u.CacheWriteTokens, 0)
	micro := float64(uncached)*p.Input +
		float64(u.CachedTokens)*cachedRate +
		float64(u.CacheWriteTokens)*writeRate +
		float64(u.CompletionTokens)*p.Output
	return micro / 1e6
}

// FormatCost is how every surface writes a cost in dollars: "~" in front when some of it
// rests on estimated usage, " + unknown" behind when some call's cost is not known (an
// unpriced model, or a request abandoned before its answer), so the figure is a lower bound.
func FormatCost(usd float64, estimated, unknown bool) string {
	s := fmt.Sprintf("$%.4f", usd)
	if estimated {
		s = "~" + s
	}
	if unknown {
		s += " + unknown"
	}
	return s
}
