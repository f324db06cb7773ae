package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/agentloop/agentloop/store"
)

// PutPrompt stores the next version of a prompt.
func (s *Store) PutPrompt(ctx context.Context, p store.Prompt) (store.Prompt, error) {
	p.CreatedAt = s.opts.clock().UTC().Truncate(time.Microsecond)
	err := s.exec(ctx, "store prompt "+p.Name, func(ctx context.Context, w *writer) error {
		if err := w.conn.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) + 1 FROM prompts WHERE tenant = ? AND name = ?`, p.Tenant, p.Name).Scan(&p.Version); err != nil {
			return fmt.Errorf("sqlite store %s: prompt %s: %w", s.path, p.Name, err)
		}
		_, err := w.conn.ExecContext(ctx, `INSERT INTO prompts (tenant, name, version, text, author, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
			p.Tenant, p.Name, p.Version, p.Text, p.Author, p.CreatedAt.UnixNano())
		if err != nil {
			return fmt.Errorf("sqlite store %s: prompt %s: %w", s.path, p.Name, err)
		}
		return nil
	})
	return p, err
}

// GetPrompt returns a version of a prompt (0: the latest).
func (s *Store) GetPrompt(ctx context.Context, tenant, name string, version int) (store.Prompt, error) {
	q := `SELECT tenant, name, version, text, author, created_at FROM prompts WHERE tenant = ? AND name = ? AND version = ?`
	args := []any{tenant, name, version}
	if version == 0 {
		q = `SELECT tenant, name, version, text, author, created_at FROM prompts WHERE tenant = ? AND name = ? ORDER BY version DESC LIMIT 1`
		args = args[:2]
	}
	list, err := s.prompts(ctx, q, args...)
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
	return s.prompts(ctx, `SELECT p.tenant, p.name, p.version, p.text, p.author, p.created_at FROM prompts p
WHERE p.tenant = ? AND p.version = (SELECT MAX(version) FROM prompts q WHERE q.tenant = p.tenant AND q.name = p.name) ORDER BY p.name`, tenant)
}

func (s *Store) prompts(ctx context.Context, q string, args ...any) ([]store.Prompt, error) {
	if s.isClosed.Load() {
		return nil, fmt.Errorf("sqlite store %s: prompts: %w", s.path, store.ErrClosed)
	}
	rows, err := s.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, s.readErr("read prompts", err)
	}
	defer rows.Close()
	var out []store.Prompt
	for rows.Next() {
		var p store.Prompt
		var created int64
		if err := rows.Scan(&p.Tenant, &p.Name, &p.Version, &p.Text, &p.Author, &created); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				break
			}
			return nil, s.readErr("read prompts", err)
		}
		p.CreatedAt = time.Unix(0, created).UTC()
		out = append(out, p)
	}
	return out, s.readErr2("read prompts", rows.Err())
}
