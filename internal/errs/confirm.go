package errs

// Codes of the human confirmation of destructive calls and of the limits
// (docs/security.md).
const (
	// CodeConfirmationRequired: the call is destructive and the
	// principal's policy is confirm; details.confirmation_id, expires_at,
	// summary and preview say what a human is asked to confirm.
	CodeConfirmationRequired = "confirmation_required"
	// CodeConfirmationInvalid: the confirmation_id cannot be used;
	// details.reason is unknown, expired, used, denied or mismatch (then
	// details.mismatch names principal, operation or arguments).
	CodeConfirmationInvalid = "confirmation_invalid"
)
