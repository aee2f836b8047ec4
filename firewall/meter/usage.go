package meter

import (
	"bytes"
	"encoding/json"
)

// Usage is the token usage of one model call.
type Usage struct {
	Model      string
	Input      int64
	Output     int64
	CacheWrite int64
	CacheRead  int64
	// CachedIncluded is true when CacheRead is a part of Input (OpenAI) rather than
	// counted beside it (Anthropic).
	CachedIncluded bool
	// Complete is true once a final usage report was seen (message_delta,
	// response.completed / .incomplete / .failed, a JSON body, a chat chunk with usage). A stream cut off
	// before it keeps what was seen so far.
	Complete bool
}

type usageJSON struct {
	InputTokens      *int64 `json:"input_tokens"`
	OutputTokens     *int64 `json:"output_tokens"`
	CacheCreation    *int64 `json:"cache_creation_input_tokens"`
	CacheRead        *int64 `json:"cache_read_input_tokens"`
	PromptTokens     *int64 `json:"prompt_tokens"`
	CompletionTokens *int64 `json:"completion_tokens"`
	InputDetails     *struct {
		CachedTokens *int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	PromptDetails *struct {
		CachedTokens *int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

type envelope struct {
	Type     string     `json:"type"`
	Model    string     `json:"model"`
	Usage    *usageJSON `json:"usage"`
	Message  *envelope  `json:"message"`  // Anthropic message_start
	Response *envelope  `json:"response"` // OpenAI Responses response.completed
}

// apply merges one JSON document (a whole body or one SSE event's data) into u.
// Anthropic's message_delta usage is cumulative, so later values replace earlier ones.
func (u *Usage) apply(data []byte) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return // "[DONE]", pings without JSON, and anything else carry no usage
	}
	var e envelope
	if json.Unmarshal(data, &e) != nil {
		return
	}
	switch {
	case e.Message != nil: // message_start: input known, output still to come
		u.setModel(e.Message.Model)
		u.merge(e.Message.Usage)
	case e.Response != nil: // response.created, .in_progress, and a terminal event
		u.setModel(e.Response.Model)
		u.merge(e.Response.Usage)
		// A response that stops at max_output_tokens ends with response.incomplete, one
		// that fails with response.failed; both carry the final usage.
		switch e.Type {
		case "response.completed", "response.incomplete", "response.failed":
			if e.Response.Usage != nil {
				u.Complete = true
			}
		}
	default: // message_delta, a chat chunk, or a whole JSON body
		u.setModel(e.Model)
		if e.Usage != nil {
			u.merge(e.Usage)
			u.Complete = true
		}
	}
}

func (u *Usage) setModel(m string) {
	if m != "" {
		u.Model = m
	}
}

func (u *Usage) merge(j *usageJSON) {
	if j == nil {
		return
	}
	set := func(dst *int64, src *int64) {
		if src != nil && *src >= 0 {
			*dst = *src
		}
	}
	set(&u.Input, j.InputTokens)
	set(&u.Output, j.OutputTokens)
	set(&u.CacheWrite, j.CacheCreation)
	set(&u.CacheRead, j.CacheRead)
	if j.PromptTokens != nil || j.CompletionTokens != nil || j.InputDetails != nil || j.PromptDetails != nil {
		u.CachedIncluded = true
	}
	set(&u.Input, j.PromptTokens)
	set(&u.Output, j.CompletionTokens)
	if j.InputDetails != nil {
		set(&u.CacheRead, j.InputDetails.CachedTokens)
	}
	if j.PromptDetails != nil {
		set(&u.CacheRead, j.PromptDetails.CachedTokens)
	}
}
