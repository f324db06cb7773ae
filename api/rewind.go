package api

// RewindRequest is the body of POST /v1/sessions/{id}/rewind.
type RewindRequest struct {
	// At is the step whose end the session goes back to, from 1.
	At int `json:"at"`
	// Message, when given, is a person's message the model reads after
	// step At's conversation; the session is resumed with it.
	Message string `json:"message,omitempty"`
	// DryRun only says what the rewind would do; nothing changes.
	DryRun bool `json:"dry_run,omitempty"`
}

// Rewound is the answer to a rewind (or a dry run of one).
type Rewound struct {
	SessionID string `json:"session_id"`
	At        int    `json:"at"`
	// Files is what restoring step At's checkpoint does to the workspace
	// as it is now.
	Files []FileChange `json:"files"`
	// RewoundSteps are the steps set aside, in the order they ran.
	RewoundSteps []int `json:"rewound_steps"`
	// Resumed: the session runs again.
	Resumed bool `json:"resumed"`
}

// FileChange is what happens to one workspace file: "added" (it comes
// back), "modified" or "deleted" (it goes away).
type FileChange struct {
	Path   string `json:"path"`
	Change string `json:"change"`
}
