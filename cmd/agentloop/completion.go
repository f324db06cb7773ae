package main

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// Shell completion. The scripts ask the binary itself (agentloop
// __complete WORDS…) for the candidates, and it reads them from the same
// usage text -h prints, so completion never falls behind a new command,
// subcommand or flag.

const completionUsage = `Usage: agentloop completion bash|zsh|fish

Prints a completion script for the shell. For example:
  bash:  source <(agentloop completion bash)     (or into ~/.local/share/bash-completion/completions/agentloop)
  zsh:   source <(agentloop completion zsh)
  fish:  agentloop completion fish > ~/.config/fish/completions/agentloop.fish`

var completionScripts = map[string]string{
	"bash": `_agentloop() {
  local cur="${COMP_WORDS[COMP_CWORD]}"
  COMPREPLY=($(compgen -W "$(agentloop __complete "${COMP_WORDS[@]:1:COMP_CWORD-1}" 2>/dev/null)" -- "$cur"))
}
complete -o default -F _agentloop agentloop
`,
	"zsh": `#compdef agentloop
_agentloop() {
  local -a candidates
  candidates=(${(f)"$(agentloop __complete ${words[2,CURRENT-1]} 2>/dev/null)"})
  compadd -a candidates
}
compdef _agentloop agentloop
`,
	"fish": `complete -c agentloop -f -a '(agentloop __complete (commandline -opc)[2..-1] 2>/dev/null)'
`,
}

func cmdCompletion(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 || completionScripts[args[0]] == "" {
		fmt.Fprintln(stderr, completionUsage)
		if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
			return 0
		}
		return exitUsage
	}
	fmt.Fprint(stdout, completionScripts[args[0]])
	return 0
}

var (
	usageFlag       = regexp.MustCompile(`(?m)^  -(-?[a-z][a-z0-9-]*)`)
	usageSubcommand = regexp.MustCompile(`(?m)^  (?:agentloop [a-z-]+ )?([a-z][a-z-]*)\s`)
)

// cmdComplete prints the words that may follow args, one a line: the
// commands, a command's subcommands, and its flags (as --name).
func cmdComplete(args []string, stdout, _ io.Writer) int {
	if len(args) == 0 {
		for _, c := range commands() {
			fmt.Fprintln(stdout, c.name)
		}
		return 0
	}
	var usage bytes.Buffer
	help := append(append([]string{}, args[:min(len(args), 2)]...), "-h")
	mainArgs(help, &usage, &usage)
	text := usage.String()
	seen := map[string]bool{}
	emit := func(w string) {
		if !seen[w] {
			seen[w] = true
			fmt.Fprintln(stdout, w)
		}
	}
	if len(args) == 1 && (strings.Contains(text, "<command>") || strings.Contains(text, "agentloop "+args[0]+" ")) { // a command with subcommands lists them
		for _, m := range usageSubcommand.FindAllStringSubmatch(text, -1) {
			if m[1] != "agentloop" {
				emit(m[1])
			}
		}
	}
	for _, m := range usageFlag.FindAllStringSubmatch(text, -1) {
		emit("--" + strings.TrimPrefix(m[1], "-"))
	}
	return 0
}
