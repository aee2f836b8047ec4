// Package scriptedmodel is a scripted model API server for tests and the demo: it plays
// a Script (tool calls, then a final answer) to a coding agent through the APIs the
// firewall's model gateways forward, and accepts only the real key, so a test through
// the gateway passes only if the gateway swapped the VM's sentinel key for it. It is
// test and demo infrastructure, not a model: it reads no prompt.
//
// Endpoints (anything else is 404 in the shape of the API the path or headers belong
// to; a missing or wrong key is 401 in the provider's shape, before the body is read):
//
//   - POST /v1/messages: Anthropic Messages, as JSON or, with "stream": true, as
//     server-sent events in the API's order: message_start (the message, empty, with
//     the input usage and one output token), then per content block
//     content_block_start, content_block_delta (text_delta, or input_json_delta
//     starting with an empty piece), content_block_stop — a ping after the first
//     block opens —, then message_delta (stop_reason tool_use or end_turn, and the
//     whole usage: input, cache and output tokens) and message_stop. The query string
//     (Claude Code sends ?beta=true) is ignored.
//   - POST /v1/messages/count_tokens: {"input_tokens": n}, an estimate; it plays no turn.
//   - POST /v1/responses: OpenAI Responses, as JSON or as the API's stream:
//     response.created, response.in_progress, then per output item
//     response.output_item.added, its content (a message: response.content_part.added,
//     response.output_text.delta…, response.output_text.done,
//     response.content_part.done; a function call:
//     response.function_call_arguments.delta…, .done; a custom tool call such as
//     Codex's apply_patch: response.custom_tool_call_input.delta…, .done) and
//     response.output_item.done, then response.completed with the usage. Every event
//     carries its sequence_number.
//   - POST /v1/chat/completions: OpenAI Chat Completions, as JSON or as chunks ending
//     with data: [DONE]; a stream reports usage only when the request asks for it
//     (stream_options.include_usage), as the API does, so a test can see that the
//     gateway asks.
//   - GET /v1/models and /v1/models/{id}, in the shape of the provider the request's
//     headers name (x-api-key or anthropic-version: Anthropic).
//
// Which request gets which turn, and what the others get, is said on Server. Every
// request is recorded (Server.Requests) with the key it presented (redacted, with a
// fingerprint), its model, tools and tool results, and what it was answered.
//
// The package imports the standard library only: the firewall's tests, the runner's
// and the demo can all use it.
package scriptedmodel
