package assemble

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/agentloop/agentloop/config"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/provider"
	"github.com/agentloop/agentloop/model/scripted"
)

// ModelSpec is the spec to record for a --model value: the provider's
// default for none, and a script's absolute path (a session resumed from
// another directory must find it).
func ModelSpec(spec string) (string, error) {
	if spec == "" {
		return provider.DefaultSpec, nil
	}
	if path, ok := strings.CutPrefix(spec, "script:"); ok {
		abs, err := filepath.Abs(path)
		if err != nil {
			return "", err
		}
		return "script:" + abs, nil
	}
	if _, _, err := provider.Parse(spec); err != nil {
		return "", err
	}
	return spec, nil
}

// scriptPlayed is how many steps of the script spec names the session
// has already played, which its scripted model skips. A session on the
// model it was started with (recorded) has had every model call from it,
// failed ones included: InteractionCount. A model the session moved to
// later — a fallback, or the other model of a fork (model.switched) — has
// played only the replies of the live steps it ran, so its script starts
// at its first step and carries on from there when the session resumes.
// Steps a rewind set aside are not counted, as InteractionCount is
// restored by a rewind.
func scriptPlayed(st *loop.State, recorded, spec string) int {
	switched := false
	for i := range st.Iterations {
		if m := st.Iterations[i].Model; m != "" && m != recorded {
			switched = true
			break
		}
	}
	if spec == recorded && !switched && (st.CurrentModel == "" || st.CurrentModel == recorded) {
		return st.InteractionCount
	}
	played := 0
	for i := range st.Iterations {
		it := &st.Iterations[i]
		if it.Rewound || it.Model != spec {
			continue
		}
		for _, m := range it.Messages {
			if m.Role == model.RoleAssistant && m.Kind == "" {
				played++ // one model.responded
			}
		}
	}
	return played
}

// openModel opens the session's model. played is how many replies the
// session already has: a scripted model skips them.
func (r *Resolver) openModel(spec *loop.SessionStarted, prof *config.Profile, played int) (model.Model, error) {
	name := spec.Model
	if name == "" {
		name = provider.DefaultSpec
	}
	if path, ok := strings.CutPrefix(name, "script:"); ok {
		script, err := scripted.Load(path)
		if err != nil {
			return nil, err
		}
		m := scripted.New(script)
		m.Skip(played) // the replies already played are in the log
		return m, nil
	}
	opts := provider.Options{BaseURL: spec.Endpoint, APIKey: r.APIKey}
	if r.BaseURL != "" && spec.Endpoint == RedactURL(r.BaseURL) {
		opts.BaseURL = r.BaseURL
	}
	if opts.APIKey == "" && prof != nil && prof.APIKeyEnv != "" {
		opts.APIKey = os.Getenv(prof.APIKeyEnv)
	}
	if o := spec.ModelOptions; o != nil {
		opts.NumCtx, opts.StreamTools, opts.Thinking = o.NumCtx, o.StreamTools, o.Thinking
	}
	return provider.Open(name, opts)
}

// ContextWindow is the context window a session with this model spec has
// when the provider says (Ollama: the num_ctx it is sent), else 0.
func ContextWindow(spec string, o *loop.ModelOptions) int {
	if !strings.HasPrefix(spec, "ollama/") {
		return 0
	}
	if o != nil && o.NumCtx > 0 {
		return o.NumCtx
	}
	return provider.DefaultOllamaNumCtx
}

// fallbackSpec is spec with its model moved to name, one of its fallback
// models: the endpoint stays for a model of the same provider, another
// provider is called at its own.
func fallbackSpec(spec loop.SessionStarted, name string) loop.SessionStarted {
	if providerOf(name) != providerOf(firstSet(spec.Model, provider.DefaultSpec)) {
		spec.Endpoint = ""
	}
	spec.Model = name
	return spec
}

func providerOf(spec string) string {
	p, _, _ := strings.Cut(spec, "/")
	return p
}
