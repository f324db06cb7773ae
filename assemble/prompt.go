package assemble

import (
	"github.com/agentloop/agentloop/config"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/prompt"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/workspace"
)

// systemPrompt builds a new session's system prompt for the tools it
// resolved: the step limit is always stated, and files the task names are
// listed.
func (r *Resolver) systemPrompt(spec *loop.SessionStarted, prof *config.Profile, tools *tool.Registry, ws *workspace.Workspace) (string, error) {
	d := prompt.Data{Tools: tools.Specs(), MaxIterations: spec.Limits.MaxIterations, Marker: spec.Marker, Mode: PromptMode(spec.Mode)}
	if ws != nil {
		d.Workspace = prompt.Workspace(spec.Workspace, spec.Task)
	}
	tmpl := r.PromptTemplate
	if tmpl == "" && prof != nil {
		tmpl = prof.SystemPromptFile
	}
	if tmpl != "" {
		return prompt.Build(d, prompt.Options{TemplatePath: tmpl})
	}
	return prompt.Build(d)
}

// PromptMode is the system prompt's mode for a session mode.
func PromptMode(m loop.Mode) prompt.Mode {
	switch m {
	case loop.ModeSelfReasoning:
		return prompt.ModeSelfReasoning
	case loop.ModeSingleShot:
		return prompt.ModeSingleShot
	}
	return prompt.ModeTools
}
