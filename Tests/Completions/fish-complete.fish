# Prints what fish completes for command lines, one candidate a line (without its
# description) and `----` after each line's:
#   fish -N fish-complete.fish SCRIPT 'nalcast produce --pre' ['nalcast consume --join ' ...]
# SCRIPT is `nalcast completions fish`; `complete -C` is fish's own completion of a line.
source $argv[1]
for line in $argv[2..-1]
    complete -C "$line" | string replace -r '\t.*' ''
    echo ----
end
