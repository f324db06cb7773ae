package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentloop/agentloop/store"
)

// CreateKey stores an API key (its hash, never the key).
func (s *Store) CreateKey(ctx context.Context, k store.Key) error {
	if err := s.checkOpen("create key"); err != nil {
		return err
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO api_keys (id, hash, tenant, role, name, created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
		k.ID, k.Hash, k.Tenant, k.Role, k.Name, encodeTime(k.CreatedAt))
	if err != nil {
		return s.errf("create key %s: %w", k.ID, err)
	}
	return nil
}

const keyCols = `id, hash, tenant, role, name, created_at`

// KeyByHash returns the key with this hash.
func (s *Store) KeyByHash(ctx context.Context, hash string) (store.Key, error) {
	list, err := s.keys(ctx, `SELECT `+keyCols+` FROM api_keys WHERE hash = $1`, hash)
	if err != nil {
		return store.Key{}, err
	}
	if len(list) == 0 {
		return store.Key{}, fmt.Errorf("api key: %w", store.ErrNotFound)
	}
	return list[0], nil
}

// ListKeys returns a tenant's keys (every tenant's for ""), oldest first.
func (s *Store) ListKeys(ctx context.Context, tenant string) ([]store.Key, error) {
	return s.keys(ctx, `SELECT `+keyCols+` FROM api_keys WHERE $1 = '' OR tenant = $1 ORDER BY created_at, id`, tenant)
}

// DeleteKey revokes a key.
func (s *Store) DeleteKey(ctx context.Context, tenant, id string) error {
	if err := s.checkOpen("delete key"); err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM api_keys WHERE id = $1 AND ($2 = '' OR tenant = $2)`, id, tenant)
	if err != nil {
		return s.errf("delete key %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("api key %s: %w", id, store.ErrNotFound)
	}
	return nil
}

func (s *Store) keys(ctx context.Context, q string, arg any) ([]store.Key, error) {
	if err := s.checkOpen("keys"); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, q, arg)
	if err != nil {
		return nil, s.readErr("read keys", err)
	}
	defer rows.Close()
	var out []store.Key
	for rows.Next() {
		var k store.Key
		if err := rows.Scan(&k.ID, &k.Hash, &k.Tenant, &k.Role, &k.Name, &k.CreatedAt); err != nil {
			return nil, s.readErr("read keys", err)
		}
		k.CreatedAt = k.CreatedAt.UTC()
		out = append(out, k)
	}
	return out, s.readErr("read keys", rows.Err())
}

// PutPrompt stores the next version of a prompt. Two servers saving the
// same prompt at once both succeed, one version after the other.
func (s *Store) PutPrompt(ctx context.Context, p store.Prompt) (store.Prompt, error) {
	if err := s.checkOpen("store prompt"); err != nil {
		return store.Prompt{}, err
	}
	p.CreatedAt = encodeTime(s.opts.clock())
	for attempt := 0; ; attempt++ {
		err := s.pool.QueryRow(ctx, `INSERT INTO prompts (tenant, name, version, text, author, created_at)
SELECT $1, $2, COALESCE(MAX(version), 0) + 1, $3, $4, $5 FROM prompts WHERE tenant = $1 AND name = $2 RETURNING version`,
			p.Tenant, p.Name, p.Text, p.Author, p.CreatedAt).Scan(&p.Version)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23505" && attempt < 10 {
			continue // another server took this version number: take the next
		}
		if err != nil {
			return store.Prompt{}, s.errf("prompt %s: %w", p.Name, err)
		}
		return p, nil
	}
}

const promptCols = `tenant, name, version, text, author, created_at`

// GetPrompt returns a version of a prompt (0: the latest).
func (s *Store) GetPrompt(ctx context.Context, tenant, name string, version int) (store.Prompt, error) {
	q := `SELECT ` + promptCols + ` FROM prompts WHERE tenant = $1 AND name = $2 AND ($3 = 0 OR version = $3) ORDER BY version DESC LIMIT 1`
	list, err := s.prompts(ctx, q, tenant, name, version)
	if err != nil {
		return store.Prompt{}, err
	}
	if len(list) == 0 {
		return store.Prompt{}, fmt.Errorf("prompt %s version %d: %w", name, version, store.ErrNotFound)
	}
	return list[0], nil
}

// ListPrompts returns the latest version of each of a tenant's prompts.
func (s *Store) ListPrompts(ctx context.Context, tenant string) ([]store.Prompt, error) {
	return s.prompts(ctx, `SELECT DISTINCT ON (name) `+promptCols+` FROM prompts WHERE tenant = $1 ORDER BY name, version DESC`, tenant)
}

func (s *Store) prompts(ctx context.Context, q string, args ...any) ([]store.Prompt, error) {
	if err := s.checkOpen("prompts"); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, s.readErr("read prompts", err)
	}
	defer rows.Close()
	var out []store.Prompt
	for rows.Next() {
		var p store.Prompt
		if err := rows.Scan(&p.Tenant, &p.Name, &p.Version, &p.Text, &p.Author, &p.CreatedAt); err != nil {
			return nil, s.readErr("read prompts", err)
		}
		p.CreatedAt = p.CreatedAt.UTC()
		out = append(out, p)
	}
	return out, s.readErr("read prompts", rows.Err())
}
