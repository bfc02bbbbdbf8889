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
    set -l out ($prog __complete $tokens (commandline -ct) 2>/dev/null)
    or return 1
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
