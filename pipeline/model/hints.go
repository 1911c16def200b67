package model

import (
	"fmt"
	"net/http"
	"strings"
)

// rejectedHint is the setting to check for a refused request, by its status: the key, the
// URL and model, or the request parameter the server names.
func rejectedHint(ep *endpoint, role Role, model string, f fault) string {
	if (serverError{msg: f.text}).says(locationWords) {
		return fmt.Sprintf(": the provider refuses requests from where this machine is (its country or IP address): run ticketd where %s serves, or use another endpoint", ep.baseURL)
	}
	if (serverError{msg: f.text}).says(noFitWords) {
		return fmt.Sprintf(": the model does not fit the memory of the server at %s: set models.roles.%s.model (%q) to a smaller model or a smaller quantization of it (e.g. a q4 tag), or give the server more memory (free it from other models, or run it on a larger machine)", ep.baseURL, role, model)
	}
	switch f.status {
	case http.StatusUnauthorized, http.StatusForbidden:
		if ep.keyEnv != "" {
			return ": check " + ep.keyEnv
		}
		return fmt.Sprintf(": the endpoint wants a key; set models.endpoints.%s.api_key_env", ep.name)
	case http.StatusNotFound:
		low := strings.ToLower(f.text)
		switch {
		case strings.Contains(low, "try pulling it first"):
			// Ollama: {"error":"model \"llama3\" not found, try pulling it first"}
			// (ollama/ollama-python#149, FlowiseAI/Flowise#2335).
			return fmt.Sprintf(": the server at %s does not have the model %q: pull it there (ollama pull %s), or set models.roles.%s.model to one it has (ollama list)", ep.baseURL, model, model, role)
		case strings.Contains(low, "no models loaded"):
			// LM Studio: "No models loaded. Please load a model in the developer page or use
			// the `lms load` command" (lmstudio-ai/lms#107).
			return fmt.Sprintf(": the server at %s has no model loaded: load %q there (lms load) and keep it loaded for the night", ep.baseURL, model)
		}
		return fmt.Sprintf(": check models.endpoints.%s.base_url (%s) and models.roles.%s.model (%q)", ep.name, ep.baseURL, role, model)
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		return paramHint(ep.name, role, f.apiMsg)
	}
	return ""
}

// paramHint is the setting to change for a request refused with 400 or 422: the one for
// the parameter the server names, else the list of settings that shape the request.
func paramHint(endpoint string, role Role, said string) string {
	low := strings.ToLower(said)
	switch {
	case strings.Contains(low, "prompt_cache_key"):
		return fmt.Sprintf(": set models.endpoints.%s.prompt_cache_key: false (this server does not take it)", endpoint)
	case outputLimitTooLarge(low):
		return fmt.Sprintf(": lower models.roles.%s.max_output_tokens to the model's output limit (or set models.prices.<model>.max_output)", role)
	case strings.Contains(low, "max_completion_tokens"):
		return fmt.Sprintf(": set models.endpoints.%s.max_tokens_field: max_tokens", endpoint)
	case strings.Contains(low, "parallel_tool_calls"):
		return fmt.Sprintf(": remove models.endpoints.%s.parallel_tool_calls, or set it to false", endpoint)
	case strings.Contains(low, "reasoning_effort"):
		return fmt.Sprintf(": remove models.roles.%s.reasoning_effort (this model does not take it)", role)
	case strings.Contains(low, "support tools") || strings.Contains(low, "tool_choice") || strings.Contains(low, "tools is not supported"):
		return fmt.Sprintf(": models.roles.%s.model must support tool calls", role)
	}
	return fmt.Sprintf(": if the server names an unknown parameter, see models.endpoints.%s prompt_cache_key, max_tokens_field, parallel_tool_calls and extra_body", endpoint)
}

// outputLimitTooLarge says whether a refusal (lower case) is about the output limit's value,
// not its name: OpenAI "max_tokens is too large: 32000. This model supports at most 16384
// completion tokens", Groq "`max_tokens` must be less than or equal to `16384`", Volcengine
// "The parameter `max_completion_tokens` … integer above maximum value, expected a value <=
// 12288". Renaming the field (max_tokens_field) would not help these.
func outputLimitTooLarge(low string) bool {
	if !strings.Contains(low, "max_tokens") && !strings.Contains(low, "max_completion_tokens") {
		return false
	}
	for _, w := range []string{"too large", "at most", "less than or equal", "above maximum", "value <=", "must be <="} {
		if strings.Contains(low, w) {
			return true
		}
	}
	return false
}

// overflowHint is the setting to change for a request refused as too large when the limit
// is not the model's context but the account's tokens per minute: Groq answers 413 "Request
// too large for model … on tokens per minute (TPM): Limit 6000, Requested 14810", counting
// the request's output limit (max_tokens) with its prompt, so that with a large
// max_output_tokens every request is refused however short its prompt
// (zeeyado/koassistant.koplugin#106, HunorLaczko/ha-groq-cloud-api#27); compacting the
// conversation cannot help that.
func overflowHint(role Role, f fault) string {
	if !(serverError{msg: f.text}).says(perMinuteWords) {
		return ""
	}
	return fmt.Sprintf(": the limit is the account's tokens per minute, which counts the output limit with the prompt: lower models.roles.%s.max_output_tokens (and context_window) below it, or raise the account's tier", role)
}

// perMinuteWords are how providers name a tokens-per-minute limit, lower case.
var perMinuteWords = []string{"tokens per minute", "(tpm)"}
