#!/usr/bin/env zsh
# Prints what zsh's completion system offers for a command line, one candidate a line:
#   zsh -f zsh-complete.zsh DIR 'nalcast produce --pre' ['nalcast consume --join ' ...]
# prints the candidates of each line and a line `----` after them. DIR holds the completion function (_nalcast). An interactive zsh runs in a pseudo-terminal
# (zsh/zpty) with compinit and that function on $fpath; Tab is bound to complete-word, and
# compadd is wrapped to print each candidate as it is added, between two NUL lines (the
# technique of Valodim's zsh-capture-completion).
zmodload zsh/zpty || { echo "zsh-complete: no zsh/zpty" >&2; exit 2 }
dir=$1
setup=$(mktemp) dump=$(mktemp -u)
cat > $setup <<SETUP
PROMPT=
fpath=($dir \$fpath)
autoload -U compinit && compinit -u -d $dump
bindkey '^M' undefined
bindkey '^J' undefined
bindkey '^I' complete-word
null-line() { echo -E - \$'\\0' }
compprefuncs=(null-line)
comppostfuncs=(null-line exit)
zstyle ':completion:*' list-grouped false
zstyle ':completion:*' insert-tab false
compadd() {
  # Adding to an array (-O, -A, -D): only a query, nothing offered.
  if [[ \${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd "\$@"; return \$?; fi
  local -a hits
  builtin compadd -A hits "\$@"
  local -A apre hpre hsuf asuf
  zparseopts -E P:=apre p:=hpre S:=asuf s:=hsuf
  local h
  for h in \$hits; do echo -E - "\$IPREFIX\${apre[-P]}\${hpre[-p]}\$h"; done
}
echo ready
SETUP
for line in "${@[2,-1]}"; do
  zpty z zsh -f -i
  zpty -w z "source $setup"
  ok=0
  repeat 20; do zpty -r z out && [[ $out == *ready* ]] && { ok=1; break }; done
  (( ok )) || { echo "zsh-complete: the shell did not start" >&2; exit 2 }
  zpty -w z "$line"$'\t'
  integer seen=0
  { while zpty -r z; do :; done } | while IFS= read -r out; do
    if [[ $out == *$'\0'* ]]; then (( seen++ )); (( seen == 2 )) && break; continue; fi
    (( seen == 1 )) && print -r -- ${out%$'\r'}
  done
  zpty -d z
  print -- ----
done
rm -f $setup $dump
