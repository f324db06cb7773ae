package telemetry

import (
	"sync"

	"github.com/agentloop/agentloop/model/price"
)

// Metric labels stay bounded whatever model names sessions are started
// with: a model the price table knows keeps its name; the first
// maxUnknownModels other names keep theirs too (local models, new ones);
// every name after that is counted as "other". Spans keep the real name.
const maxUnknownModels = 16

var (
	knownPrices   = price.Default()
	unknownMu     sync.Mutex
	unknownModels = map[string]bool{}
)

// modelLabel is the model's name as a metric label.
func modelLabel(provider, name string) string {
	if provider == "scripted" {
		return "scripted"
	}
	if _, _, ok := knownPrices.Lookup(name); ok {
		return name
	}
	if _, _, ok := knownPrices.Lookup(provider + "/" + name); ok {
		return name
	}
	unknownMu.Lock()
	defer unknownMu.Unlock()
	if unknownModels[name] {
		return name
	}
	if len(unknownModels) < maxUnknownModels {
		unknownModels[name] = true
		return name
	}
	return "other"
}
