#!/usr/bin/env bash
# Prints what bash's programmable completion offers for command lines, one candidate a line
# and `----` after each line's:
#   bash bash-complete.sh SCRIPT 'nalcast produce --pre' ['nalcast consume --join ' ...]
# SCRIPT is `nalcast completions bash`. As bash does on Tab: COMP_LINE and COMP_POINT (the
# cursor at the end), COMP_WORDS split at COMP_WORDBREAKS (so `x11:0` is three words), then
# the function `complete -p nalcast` names; candidates are shown whole again (bash would
# insert them after the word's last `:`).
source "$1"
shift
function=$(complete -p nalcast | sed -n 's/.*-F \([^ ]*\) .*/\1/p')
for COMP_LINE in "$@"; do
  COMP_POINT=${#COMP_LINE}
  COMP_WORDS=()
  word=""
  for ((i = 0; i < ${#COMP_LINE}; i++)); do
    c=${COMP_LINE:i:1}
    if [[ $c == [[:space:]] ]]; then [[ -n $word ]] && COMP_WORDS+=("$word"); word=""
    elif [[ $COMP_WORDBREAKS == *"$c"* ]]; then [[ -n $word ]] && COMP_WORDS+=("$word"); COMP_WORDS+=("$c"); word=""
    else word+=$c; fi
  done
  COMP_WORDS+=("$word")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMPREPLY=()
  "$function" nalcast "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
  current=${COMP_LINE##*[[:space:]]}
  before=""
  [[ $current == *:* ]] && before=${current%"${current##*:}"}
  for candidate in "${COMPREPLY[@]}"; do printf '%s\n' "$before$candidate"; done
  echo ----
done
