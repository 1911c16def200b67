package model

import (
	"math"
	"testing"
)

func TestCost(t *testing.T) {
	anthropicLike := Price{Input: 3, CachedInput: 0.30, CacheWrite: 3.75, Output: 15}
	tests := []struct {
		name  string
		price Price
		usage Usage
		want  float64 // hand-computed, USD
	}{
		{
			// 2000 uncached x 2.00 + 8000 cached x 0.50 + 1000 out x 8.00 = 16000 µ$
			name:  "cached discount gpt-4.1",
			price: defaultPrices["gpt-4.1"],
			usage: Usage{PromptTokens: 10000, CachedTokens: 8000, CompletionTokens: 1000},
			want:  0.016,
		},
		{
			// no cache: 10000 x 2.00 + 1000 x 8.00 = 28000 µ$
			name:  "no cache gpt-4.1",
			price: defaultPrices["gpt-4.1"],
			usage: Usage{PromptTokens: 10000, CompletionTokens: 1000},
			want:  0.028,
		},
		{
			// 2000 uncached x 3 + 2000 cached x 0.30 + 6000 writes x 3.75 + 500 out x 15
			// = 6000 + 600 + 22500 + 7500 = 36600 µ$
			name:  "cache writes are part of the prompt",
			price: anthropicLike,
			usage: Usage{PromptTokens: 10000, CachedTokens: 2000, CacheWriteTokens: 6000, CompletionTokens: 500},
			want:  0.0366,
		},
		{
			// writes without a surcharge are billed as input: 10000 x 2.00 + 0 = 20000 µ$
			name:  "cache writes at input rate when no write price",
			price: defaultPrices["gpt-4.1"],
			usage: Usage{PromptTokens: 10000, CacheWriteTokens: 4000},
			want:  0.020,
		},
		{
			// reasoning is inside completion: 1000 x 1.10 + 3000 x 4.40 = 14300 µ$
			name:  "reasoning tokens billed once as output o4-mini",
			price: defaultPrices["o4-mini"],
			usage: Usage{PromptTokens: 1000, CompletionTokens: 3000, ReasoningTokens: 2500},
			want:  0.0143,
		},
		{
			// unknown cached rate falls back to input: 500 x 1 + 500 x 1 + 100 x 2 = 1200 µ$
			name:  "no cached price bills cached at input",
			price: Price{Input: 1, Output: 2},
			usage: Usage{PromptTokens: 1000, CachedTokens: 500, CompletionTokens: 100},
			want:  0.0012,
		},
		{
			// 1000 uncached x 0.25 + 99000 cached x 0.025 + 2000 out x 2.00
			// = 250 + 2475 + 4000 = 6725 µ$
			name:  "mostly cached gpt-5-mini",
			price: defaultPrices["gpt-5-mini"],
			usage: Usage{PromptTokens: 100000, CachedTokens: 99000, CompletionTokens: 2000},
			want:  0.006725,
		},
		{
			name:  "inconsistent counts never go negative",
			price: Price{Input: 1, CachedInput: 0.5, Output: 1},
			usage: Usage{PromptTokens: 100, CachedTokens: 200},
			want:  0.0001,
		},
		{name: "zero usage", price: defaultPrices["gpt-5"], want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Cost(tt.price, tt.usage)
			if math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("Cost(%+v, %+v) = %.9f, want %.9f", tt.price, tt.usage, got, tt.want)
			}
		})
	}
}

func TestDefaultPrices(t *testing.T) {
	want := []string{"gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano", "gpt-4o", "gpt-4o-mini", "o3", "o4-mini", "gpt-5", "gpt-5-mini", "gpt-5-nano"}
	got := DefaultPrices()
	for _, m := range want {
		p, ok := got[m]
		if !ok {
			t.Errorf("DefaultPrices() lacks %s", m)
			continue
		}
		if p.Input <= 0 || p.Output <= 0 || p.CachedInput <= 0 || p.CachedInput >= p.Input || p.MaxOutput <= 0 {
			t.Errorf("DefaultPrices()[%s] = %+v: want input, output, a cached discount and max output", m, p)
		}
	}
	got["gpt-4.1"] = Price{}
	if DefaultPrices()["gpt-4.1"].Input == 0 {
		t.Error("DefaultPrices returned the shared table, not a copy")
	}
}

func TestPriceFor(t *testing.T) {
	cfg := Config{Prices: map[string]Price{
		"qwen-local": {Input: 0.1, Output: 0.2},
		"gpt-4o":     {Input: 9, Output: 9},
	}}
	tests := []struct {
		model  string
		want   Price
		wantOK bool
	}{
		{"gpt-4.1", defaultPrices["gpt-4.1"], true},
		{"gpt-4.1-2025-04-14", defaultPrices["gpt-4.1"], true},
		{"gpt-4.1-mini", defaultPrices["gpt-4.1-mini"], true},
		{"gpt-4o", Price{Input: 9, Output: 9}, true}, // config replaces the default
		{"qwen-local", Price{Input: 0.1, Output: 0.2}, true},
		{"llama-3-70b", Price{}, false},
		{"gpt-4.1-2025-13-99", Price{}, false},
	}
	for _, tt := range tests {
		got, ok := cfg.PriceFor(tt.model)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("PriceFor(%q) = %+v, %v; want %+v, %v", tt.model, got, ok, tt.want, tt.wantOK)
		}
	}
}
