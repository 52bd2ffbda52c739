/// `nalcast completions zsh`: an `_arguments` function per command, autoloadable from
/// `$fpath` (`_nalcast`, with `#compdef`) or sourced.
public enum ZshCompletion {
    public static func script(_ model: CompletionModel) -> String {
        var out = """
        #compdef nalcast
        # zsh completion for nalcast, printed by `nalcast completions zsh` from its option tables.
        # Installed as /usr/share/zsh/vendor-completions/_nalcast, or: source <(nalcast completions zsh)

        # A value given in forms: plain words, and prefixes completed further (prefix=what).
        _nalcast_forms() {
          local form prefix rest
          local -a words prefixes
          for form in "$@"; do
            if [[ $form != *=* ]]; then words+=("$form"); continue; fi
            prefix=${form%%=*} rest=${form#*=}
            if [[ $PREFIX == ${prefix}* ]]; then
              compset -P "$prefix"
              case $rest in
                files) _files ;;
                displays) local -a displays; displays=(/tmp/.X11-unix/X*(N:t)); compadd -- ${displays#X} ;;
                pulse-sources) whence -p pactl >/dev/null && compadd -- ${(f)"$(pactl list short sources 2>/dev/null | cut -f2)"} ;;
              esac
              return
            fi
            prefixes+=("$prefix")
          done
          compadd -a words
          compadd -S '' -a prefixes
        }


        """
        for command in model.commands { out += formFunctions(command) + function(command) + "\n" }
        out += main(model)
        return out
    }

    /// `_nalcast_produce`: `_arguments` with every option.
    static func function(_ command: CompletionModel.Command) -> String {
        var specs: [String] = []
        for option in command.options {
            let description = "[" + bracketed(option.description) + "]"
            let value = option.value.map { value in
                if case .forms = value { return ":" + message(option.placeholder ?? "value") + ":" + formFunction(command, option) }
                return ":" + message(option.placeholder ?? "value") + ":" + action(value)
            } ?? ""
            let star = option.repeatable ? "*" : ""
            if let short = option.short {
                let exclusion = option.repeatable ? "" : "(-\(short) --\(option.name))"
                specs.append(quoted(exclusion + star) + "{-\(short),--\(option.name)}" + quoted(description + value))
            } else {
                specs.append(quoted(star + "--\(option.name)" + description + value))
            }
            if option.negatable {
                specs.append(quoted("--no-\(option.name)[" + bracketed("turn --\(option.name) off") + "]"))
            }
        }
        if let operand = command.operand {
            specs.append(quoted("*:" + (command.name == "completions" ? "shell" : "argument") + ":" + action(operand)))
        }
        let body = specs.isEmpty ? "  _message 'no more arguments'" : "  _arguments -s -S \\\n    " + specs.joined(separator: " \\\n    ")
        return "_nalcast_\(BashCompletion.identifier(command.name))() {\n\(body)\n}\n"
    }

    static func main(_ model: CompletionModel) -> String {
        let described = model.commands.map { quoted("\($0.name):\($0.summary)") }.joined(separator: "\n    ")
        var cases = ""
        for command in model.commands {
            cases += "        \(command.name)) _nalcast_\(BashCompletion.identifier(command.name)) ;;\n"
        }
        return """
        _nalcast() {
          local curcontext=$curcontext state state_descr line
          local -a commands
          commands=(
            \(described)
          )
          _arguments -C \\
            '(- *)'{-h,--help}'[show the commands and exit]' \\
            '(- *)'{-V,--version}'[print the version and the libraries built against and running]' \\
            '1:command:->command' \\
            '*::argument:->argument'
          case $state in
            command) _describe -t commands 'nalcast command' commands ;;
            argument)
              curcontext=${curcontext%:*:*}:nalcast-$line[1]:
              case $line[1] in
        \(cases)      esac
              ;;
          esac
        }

        if [[ $funcstack[1] == _nalcast ]]; then
          _nalcast "$@"
        else
          compdef _nalcast nalcast
        fi

        """
    }

    /// The action of a value in an `_arguments` spec.
    static func action(_ value: CompletionModel.Value) -> String {
        switch value {
        case .any: " "
        case .files: "_files"
        case .directories: "_files -/"
        case .programs: "_command_names -e"
        case .words(let words): "(" + words.map { $0.replacing(":", with: "\\:") }.joined(separator: " ") + ")"
        case .forms: "_nalcast_forms"  // a function of the option's own: formFunctions
        }
    }

    /// `_nalcast_produce_source`: the forms of one option, called as its action (an action
    /// of `_arguments` ends at its first unescaped `:`, and forms are full of them).
    static func formFunctions(_ command: CompletionModel.Command) -> String {
        var out = ""
        for option in command.options {
            guard case .forms(let forms)? = option.value else { continue }
            let words = forms.map { form in quoted(form.rest.map { "\(form.prefix)=\($0.rawValue)" } ?? form.prefix) }
            out += "\(formFunction(command, option))() { _nalcast_forms \(words.joined(separator: " ")) }\n"
        }
        return out
    }

    static func formFunction(_ command: CompletionModel.Command, _ option: CompletionModel.Option) -> String {
        "_nalcast_\(BashCompletion.identifier(command.name))_\(BashCompletion.identifier(option.name))"
    }

    /// Text inside `[...]`: brackets escaped.
    static func bracketed(_ text: String) -> String {
        text.replacing("\\", with: "\\\\").replacing("[", with: "\\[").replacing("]", with: "\\]")
    }

    /// The message of a value (`ADDR`): colons escaped.
    static func message(_ text: String) -> String { text.replacing(":", with: "\\:") }

    /// In single quotes.
    static func quoted(_ text: String) -> String { "'" + text.replacing("'", with: "'\\''") + "'" }
}
