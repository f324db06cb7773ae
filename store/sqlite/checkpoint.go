package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// checkpointer copies the WAL back into the database file on a connection
// of its own, so that no append waits for it. Left to SQLite, the commit
// that grows the WAL past 1,000 pages runs the checkpoint itself — with
// an fsync of the WAL and of the database file — and a session's final
// append that happens to be that commit waits milliseconds for it. The
// writer's connection has automatic checkpoints turned off
// (wal_autocheckpoint=0); a PASSIVE checkpoint here runs beside its
// transactions (it takes no write lock).
//
// The WAL is reused from its start only by a transaction that begins when
// every frame in it has been copied back. Under a steady stream of commits
// that never happens by itself — commits land while a checkpoint copies —
// and the WAL would grow for as long as the store is open (100 MB in six
// seconds of sequential sessions), every commit then extending the file
// and every page lookup searching a larger WAL index. So a PASSIVE pass
// over a WAL of restartFrames or more is followed by a RESTART checkpoint:
// it holds off the writer while it copies what the PASSIVE pass could not
// (the few commits made meanwhile) and until readers no longer use the
// WAL, at most restartWait, after which the next commit starts the WAL
// over.
type checkpointer struct {
	db   *sql.DB
	conn *sql.Conn
	// kick is signalled by the writer after each commit; a checkpoint runs
	// at most once per checkpointEvery while commits keep coming.
	kick chan struct{}
	stop chan struct{}
	done chan struct{}
	// betweenPasses, when set, runs after the PASSIVE pass of a checkpoint
	// that goes on to RESTART: tests let the WAL change there, as commits
	// and readers do meanwhile in use.
	betweenPasses func()
}

// checkpointEvery is the most often the WAL is checkpointed under a steady
// stream of commits: about as often as SQLite's own 1,000-page threshold
// is reached by a thousand sessions committing at once, and rarely enough
// that the fsyncs of a checkpoint stay a small share of the disk's time.
const checkpointEvery = 250 * time.Millisecond

// restartFrames is the size of WAL (in frames, pages) at which a
// checkpoint also makes the next commit start the WAL over: SQLite's own
// automatic checkpoint threshold.
const restartFrames = 1000

// restartWait is the longest a RESTART checkpoint waits for the writer or
// a reader (its connection's busy timeout); the writer waits at most as
// long for it. A RESTART that gives up loses nothing: the next one tries
// again.
const restartWait = 100 * time.Millisecond

// newCheckpointer opens a connection of its own to the database at dsn.
func newCheckpointer(ctx context.Context, path, dsn string) (*checkpointer, error) {
	db, err := sql.Open(driverName, dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlite store %s: open the checkpoint connection: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite store %s: open the checkpoint connection: %w", path, err)
	}
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", restartWait.Milliseconds())); err != nil {
		conn.Close()
		db.Close()
		return nil, fmt.Errorf("sqlite store %s: open the checkpoint connection: %w", path, err)
	}
	c := &checkpointer{db: db, conn: conn, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go c.run()
	return c, nil
}

// committed tells the checkpointer the WAL grew. It never blocks.
func (c *checkpointer) committed() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (c *checkpointer) run() {
	defer close(c.done)
	var last time.Time
	for {
		select {
		case <-c.kick:
		case <-c.stop:
			return
		}
		if wait := checkpointEvery - time.Since(last); wait > 0 {
			select {
			case <-time.After(wait):
			case <-c.stop:
				return
			}
		}
		last = time.Now()
		// A checkpoint that fails loses nothing: the WAL keeps its pages
		// and the next one copies them.
		_ = c.checkpoint()
	}
}

// checkpoint runs one PASSIVE checkpoint — it copies what no reader still
// needs and never blocks the writer or a reader — and, when the WAL holds
// restartFrames or more, a RESTART one after it (see checkpointer).
func (c *checkpointer) checkpoint() error {
	log, err := c.run1("PASSIVE")
	if err != nil || log < restartFrames {
		return err
	}
	if c.betweenPasses != nil {
		c.betweenPasses()
	}
	_, err = c.run1("RESTART")
	return err
}

// run1 runs one checkpoint in mode and returns the frames the WAL held.
func (c *checkpointer) run1(mode string) (log int, err error) {
	var busy, done int
	err = c.conn.QueryRowContext(context.Background(), "PRAGMA wal_checkpoint("+mode+")").Scan(&busy, &log, &done)
	return log, err
}

// close stops the checkpointer, after the checkpoint in progress if any,
// and closes its connection. The writer's connection, closed last, then
// checkpoints what is left as SQLite closes the database.
func (c *checkpointer) close() error {
	close(c.stop)
	<-c.done
	return errors.Join(c.conn.Close(), c.db.Close())
}
