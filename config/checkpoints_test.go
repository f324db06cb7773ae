package config

import "testing"

func TestProfileCheckpoints(t *testing.T) {
	c, problems := Parse("c.yaml", []byte("profiles:\n  quick:\n    checkpoints: false\n  full:\n    checkpoints: true\n"), nil)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	if !c.Profiles["quick"].NoCheckpoints || c.Profiles["full"].NoCheckpoints {
		t.Errorf("quick %v, full %v", c.Profiles["quick"].NoCheckpoints, c.Profiles["full"].NoCheckpoints)
	}
	if _, problems := Parse("c.yaml", []byte("profiles:\n  p:\n    checkpoints: sometimes\n"), nil); len(problems) == 0 {
		t.Error("checkpoints: sometimes was accepted")
	}
}
