package main

import (
	"context"
	"errors"

	"github.com/agentloop/agentloop/model"
)

// noModel is the model of a runner that only records (terminate).
type noModel struct{}

func (noModel) Generate(context.Context, *model.Request, model.StreamFunc) (*model.Response, error) {
	return nil, errors.New("no model is configured for this command")
}
