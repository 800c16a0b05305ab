package errs

// Codes of the AI operations (docs/ai.md).
const (
	// CodeAIUnavailable: no chat provider (or no AI at all) is configured.
	CodeAIUnavailable = "ai_unavailable"
	// CodeAIQuota: the daily cost ceiling is reached; details.reset_at.
	CodeAIQuota = "ai_quota_exceeded"
	// CodeAIProvider: the provider failed (timeout, 5xx, unparseable output).
	CodeAIProvider = "ai_provider_error"
	// CodeAIGrounding: no citation survived verification under cite=true.
	CodeAIGrounding = "ai_grounding_failed"
	// CodeAIInputTooLarge: the scope exceeds the input budget even split up.
	CodeAIInputTooLarge = "ai_input_too_large"
	// CodeAISchemaInvalid: ai_extract's schema is not a valid JSON Schema.
	CodeAISchemaInvalid = "ai_schema_invalid"
)
