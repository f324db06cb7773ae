package main

import (
	"fmt"
	"sort"
	"strings"
)

// labelFlags is a repeatable KEY=VALUE flag: labels a session carries, to
// find it by later (`sessions list --label KEY=VALUE`).
type labelFlags map[string]string

func (l *labelFlags) String() string {
	var kv []string
	for k, v := range *l {
		kv = append(kv, k+"="+v)
	}
	sort.Strings(kv)
	return strings.Join(kv, ",")
}

func (l *labelFlags) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q: give KEY=VALUE", v)
	}
	if *l == nil {
		*l = labelFlags{}
	}
	(*l)[k] = val
	return nil
}
