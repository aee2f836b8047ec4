package meter

// FramingTokens is added to the input estimate of every call charged its worst case: the
// API adds input the body does not spell out (the system prompt it writes for tool use,
// some hundreds of tokens, and per-message framing), which a small body's byte count
// would not cover.
const FramingTokens = 1000

// Request is what the gateway read from a model call's body: enough to bound what the
// call can cost when its response reports no usage.
type Request struct {
	Model string
	// Bytes is the body's length as forwarded. Input is estimated at one token per byte:
	// a tokenizer token always stands for at least one byte of the text it encodes, so
	// the body's length bounds the tokens of everything it carries inline (JSON syntax
	// and base64 media make it an overestimate, which the context window caps).
	Bytes int64
	// MaxOutput is the request's output cap (max_tokens, max_output_tokens or
	// max_completion_tokens, the largest if several); 0: none given, the model's limit
	// applies.
	MaxOutput int64
	// Choices is how many completions were asked for (Chat Completions "n"); 0 or 1: one.
	Choices int64
}

// WorstCase returns the most a call described by r can have cost, given the usage seen
// before its response ended (never less than that usage costs): output is the request's
// cap, or the model's max_output, times the choices; input is the body's bytes plus
// FramingTokens, at most the model's context window, priced at the dearer of the input
// and cache-write rates (the request may ask for its input to be cached). The usage
// returned holds the tokens charged, all input in Input.
func (p *Prices) WorstCase(r Request, seen Usage) (u Usage, usd float64, known bool) {
	model := r.Model
	if model == "" {
		model = seen.Model
	}
	pr, known := p.Lookup(model)
	output := r.MaxOutput
	if output <= 0 {
		output = pr.MaxOutput
	}
	if r.Choices > 1 {
		output *= r.Choices
	}
	output = max(output, seen.Output)
	input := min(max(r.Bytes, 0)+FramingTokens, pr.Context)
	seenInput := seen.Input + seen.CacheWrite
	if !seen.CachedIncluded {
		seenInput += seen.CacheRead
	}
	input = max(input, seenInput)
	usd = (float64(input)*max(pr.Input, pr.CacheWrite) + float64(output)*pr.Output) / 1e6
	return Usage{Model: model, Input: input, Output: output}, usd, known
}
