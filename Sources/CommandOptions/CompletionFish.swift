/// `nalcast completions fish`: `complete` lines, one per option of each command.
public enum FishCompletion {
    public static func script(_ model: CompletionModel) -> String {
        let names = model.commands.map(\.name).joined(separator: " ")
        var out = """
        # fish completion for nalcast, printed by `nalcast completions fish` from its option tables.
        # Installed as /usr/share/fish/vendor_completions.d/nalcast.fish, or: nalcast completions fish | source

        # The command given so far (produce, consume...), if any.
        function __nalcast_command
            for w in (commandline -opc)[2..-1]
                if contains -- $w \(names)
                    echo $w
                    return 0
                end
            end
            return 1
        end

        function __nalcast_using -a name
            test "$(__nalcast_command)" = "$name"
        end

        # A value given in forms: plain words, and prefixes completed further (prefix=what).
        function __nalcast_forms
            set -l token (commandline -ct)
            for form in $argv
                set -l parts (string split -m 1 = -- $form)
                if test (count $parts) -eq 1
                    echo $form
                    continue
                end
                set -l prefix $parts[1]
                if not string match -q -- "$prefix*" $token
                    echo $prefix
                    continue
                end
                switch $parts[2]
                    case files
                        for p in (__fish_complete_path (string sub -s (math (string length -- $prefix) + 1) -- $token))
                            echo $prefix$p
                        end
                    case displays
                        for d in /tmp/.X11-unix/X*
                            echo $prefix(string replace /tmp/.X11-unix/X '' -- $d)
                        end
                    case pulse-sources
                        command -q pactl; and for s in (pactl list short sources 2>/dev/null | cut -f2)
                            echo $prefix$s
                        end
                end
            end
        end

        complete -c nalcast -f
        complete -c nalcast -n 'not __nalcast_command' -s h -l help -d 'show the commands and exit'
        complete -c nalcast -n 'not __nalcast_command' -s V -l version -d 'print the version and the libraries built against and running'

        """
        for command in model.commands {
            out += "complete -c nalcast -n 'not __nalcast_command' -a \(command.name) -d \(quoted(command.summary))\n"
        }
        for command in model.commands {
            out += "\n"
            let condition = "-n '__nalcast_using \(command.name)'"
            for option in command.options {
                out += "complete -c nalcast \(condition)\(option.short.map { " -s \($0)" } ?? "") -l \(option.name)\(arguments(option.value)) -d \(quoted(option.description))\n"
                if option.negatable {
                    out += "complete -c nalcast \(condition) -l no-\(option.name) -d \(quoted("turn --\(option.name) off"))\n"
                }
            }
            if let operand = command.operand {
                // No option before it: `-r` means nothing here, files are forced by -F alone.
                out += "complete -c nalcast \(condition)\(arguments(operand).replacing(" -r -F", with: " -F"))\n"
            }
        }
        return out
    }

    /// What `complete` takes for a value: `-r -F` files, `-x -a WORDS`...
    static func arguments(_ value: CompletionModel.Value?) -> String {
        guard let value else { return "" }
        switch value {
        case .any: return " -x"
        case .files: return " -r -F"
        case .directories: return " -x -a '(__fish_complete_directories)'"
        case .programs: return " -x -a '(__fish_complete_command)'"
        case .words(let words): return " -x -a " + quoted(words.joined(separator: " "))
        case .forms(let forms):
            let words = forms.map { form in form.rest.map { "\(form.prefix)=\($0.rawValue)" } ?? form.prefix }
            return " -x -a " + quoted("(__nalcast_forms " + words.joined(separator: " ") + ")")
        }
    }

    /// In single quotes: fish escapes only `\` and `'` there.
    static func quoted(_ text: String) -> String {
        "'" + text.replacing("\\", with: "\\\\").replacing("'", with: "\\'") + "'"
    }
}
