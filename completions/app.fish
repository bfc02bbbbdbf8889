# fish completion for app.
#
# Enable with:  app completion fish | source
# or save as ~/.config/fish/completions/app.fish.
#
# Candidates come from `app __complete <words…>` (one per line, optionally
# `candidate<TAB>description`, then `:<directive>`), so they always reflect
# the plugins installed now.

# Asks app; leaves the candidates in $__app_cands and the directive in
# $__app_directive. False when fish should complete file names instead.
function __app_prepare
    set -g __app_cands
    set -g __app_directive 0
    set -l tokens (commandline -opc)
    set -l prog $tokens[1]
    set -e tokens[1]
    set -l out (env APP_COMPLETION_SHELL=fish $prog __complete $tokens (commandline -ct) 2>/dev/null)
    or return 1
    # A multi-file plugin's own fish completion (completions/app-NAME.fish,
    # `complete -c app-NAME …`): loaded, and asked as if app-NAME were typed.
    if string match -qr '^:[0-9]+$' -- $out[-1]; and test (math "bitand("(string sub -s 2 -- $out[-1])", 64)") -ne 0
        set -l parts (string split \t -- $out[1])
        set -l cmd (string split ' ' -- $parts[2])
        source $parts[1] 2>/dev/null
        set -l rest $tokens[(math $cmd[2] + 1)..-1]
        set __app_cands (complete -C (string join ' ' -- $cmd[1] $rest (commandline -ct)))
        return 0
    end
    for line in $out
        if string match -qr '^:[0-9]+$' -- $line
            set __app_directive (string sub -s 2 -- $line)
        else if test -n "$line"
            set -a __app_cands $line
        end
    end
    if test (math "bitand($__app_directive, 1)") -ne 0
        set __app_cands
        return 0
    end
    if test (count $__app_cands) -eq 0
        # Nothing to offer: file names, unless app said not to.
        test (math "bitand($__app_directive, 4)") -ne 0
        return
    end
    return 0
end

function __app_keep_order
    test (math "bitand($__app_directive, 32)") -ne 0
end

# fish evaluates the conditions newest first: the last line asks app, the
# one above reuses its answer when it must keep app's order.
complete -c app -e
complete -c app -f -n '__app_keep_order; and test (count $__app_cands) -gt 0' -k -a '$__app_cands'
complete -c app -f -n '__app_prepare; and not __app_keep_order' -a '$__app_cands'
