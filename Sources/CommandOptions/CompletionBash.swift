/// `nalcast completions bash`: a `complete -F` function. It reads the line itself (bash
/// splits words at `:` and `=`, which `x11:0` and `pulse:NAME` contain) and offers only what
/// follows the last `:` of the word, as bash-completion's `__ltrim_colon_completions` does.
public enum BashCompletion {
    public static func script(_ model: CompletionModel) -> String {
        var out = """
        # bash completion for nalcast, printed by `nalcast completions bash` from its option tables.
        # Installed as /usr/share/bash-completion/completions/nalcast, or: source <(nalcast completions bash)

        # The words of $1... that begin with the current word.
        _nalcast_words() {
            local w
            for w in "$@"; do [[ $w == "$cur"* ]] && COMPREPLY+=("$w"); done
        }

        # Files (or with -d, directories) after a prefix of the word ($1: y4m:, or nothing).
        _nalcast_files() {
            local prefix=$1 f
            compopt -o filenames 2>/dev/null
            while IFS= read -r f; do COMPREPLY+=("$prefix$f"); done < <(compgen ${2:--f} -- "${cur#"$prefix"}")
        }

        # A value given in forms: plain words, and prefixes completed further (prefix=what).
        _nalcast_forms() {
            local form prefix rest w
            for form in "$@"; do
                if [[ $form != *=* ]]; then _nalcast_words "$form"; continue; fi
                prefix=${form%%=*} rest=${form#*=}
                if [[ $cur == "$prefix"* ]]; then
                    case $rest in
                    files) _nalcast_files "$prefix" ;;
                    displays) for w in /tmp/.X11-unix/X*; do [[ -e $w ]] && _nalcast_words "$prefix${w#/tmp/.X11-unix/X}"; done ;;
                    pulse-sources) while IFS= read -r w; do _nalcast_words "$prefix$w"; done < <(pactl list short sources 2>/dev/null | cut -f2) ;;
                    esac
                else
                    _nalcast_words "$prefix" && compopt -o nospace 2>/dev/null
                fi
            done
        }

        # Completes a value of kind $1 (files, directories, programs, words..., forms...).
        _nalcast_value() {
            case $1 in
            files) _nalcast_files "" ;;
            directories) _nalcast_files "" -d ;;
            programs) while IFS= read -r w; do COMPREPLY+=("$w"); done < <(compgen -c -- "$cur") ;;
            words) shift; _nalcast_words "$@" ;;
            forms) shift; _nalcast_forms "$@" ;;
            esac
        }


        """
        for command in model.commands { out += function(command) + "\n" }
        out += main(model)
        return out
    }

    /// `_nalcast_produce`: the value of the option before the word, else the options, else
    /// the operand.
    static func function(_ command: CompletionModel.Command) -> String {
        var lines = ["_nalcast_\(identifier(command.name))() {", "    case $prev in"]
        for option in command.options {
            guard let value = option.value else { continue }
            let names = ["--\(option.name)"] + (option.short.map { ["-\($0)"] } ?? [])
            lines.append("    \(names.joined(separator: "|"))) \(call(value)); return ;;")
        }
        lines.append("    esac")
        var words: [String] = []
        for option in command.options {
            words.append("--\(option.name)")
            if option.negatable { words.append("--no-\(option.name)") }
        }
        if !words.isEmpty {
            lines.append("    if [[ $cur == -* ]]; then _nalcast_words \(words.joined(separator: " ")); return; fi")
        }
        if let operand = command.operand { lines.append("    \(call(operand))") }
        lines.append("    return 0")
        lines.append("}")
        return lines.joined(separator: "\n") + "\n"
    }

    static func main(_ model: CompletionModel) -> String {
        let names = model.commands.map(\.name)
        let top = model.topOptions.flatMap { ["--\($0.name)"] + ($0.short.map { ["-\($0)"] } ?? []) }
        var cases = ""
        for command in model.commands {
            cases += "    \(command.name)) _nalcast_\(identifier(command.name)) ;;\n"
        }
        return """
        _nalcast() {
            local line=${COMP_LINE:0:COMP_POINT} cur="" prev="" cmd="" w
            local -a words
            read -ra words <<< "$line"
            if [[ $line != *[[:space:]] && ${#words[@]} -gt 0 ]]; then
                cur=${words[-1]}
                unset 'words[-1]'
            fi
            [[ ${#words[@]} -gt 0 ]] && prev=${words[-1]}
            COMPREPLY=()
            for w in "${words[@]:1}"; do
                case $w in \(names.joined(separator: "|"))) cmd=$w; break ;; esac
            done
            case $cmd in
            "") if [[ $cur == -* ]]; then _nalcast_words \(top.joined(separator: " ")); else _nalcast_words \(names.joined(separator: " ")); fi ;;
        \(cases)    esac
            # bash took the word apart at its last ':': offer what follows it.
            if [[ $cur == *:* && $COMP_WORDBREAKS == *:* ]]; then
                local colon=${cur%"${cur##*:}"}
                COMPREPLY=("${COMPREPLY[@]#"$colon"}")
            fi
        }
        complete -F _nalcast nalcast

        """
    }

    /// The call that completes `value`.
    static func call(_ value: CompletionModel.Value) -> String {
        switch value {
        case .any: ":"
        case .files: "_nalcast_value files"
        case .directories: "_nalcast_value directories"
        case .programs: "_nalcast_value programs"
        case .words(let words): "_nalcast_value words " + words.map(quoted).joined(separator: " ")
        case .forms(let forms):
            "_nalcast_value forms " + forms.map { form in quoted(form.rest.map { "\(form.prefix)=\($0.rawValue)" } ?? form.prefix) }.joined(separator: " ")
        }
    }

    static func identifier(_ name: String) -> String { String(name.map { $0.isLetter || $0.isNumber ? $0 : "_" }) }

    /// In single quotes unless plain.
    static func quoted(_ word: String) -> String {
        word.allSatisfy({ $0.isLetter || $0.isNumber || "-_.:=,/+@".contains($0) }) ? word : "'" + word.replacing("'", with: "'\\''") + "'"
    }
}
