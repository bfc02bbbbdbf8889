# bash completion for app                                  -*- shell-script -*-
#
# Enable with:  source <(app completion bash)
# or install as /usr/share/bash-completion/completions/app.
#
# Candidates come from `app __complete <words…>` (one per line, optionally
# `candidate<TAB>description`, then `:<directive>`), so they always reflect
# the plugins installed now. Works in plain bash; needs no bash-completion.

# Sets `words` and `cword` from COMP_WORDS, putting back together what bash
# split at `=` and `:` (`--log-format=json`, `unix:///x`), and cutting the
# current word at the cursor.
__app_words() {
    local line=${COMP_LINE:0:COMP_POINT} i w piece trimmed glued=0
    words=()
    cword=0
    for ((i = 0; i < ${#COMP_WORDS[@]}; i++)); do
        w=${COMP_WORDS[i]}
        trimmed=${line#"${line%%[![:space:]]*}"}
        if ((i > 0)) && [[ ${#trimmed} -eq ${#line} ]] &&
            [[ $w =~ ^[=:]+$ || $glued -eq 1 ]]; then
            words[${#words[@]} - 1]+=$w
        else
            words+=("")
            words[${#words[@]} - 1]=$w
        fi
        [[ $w =~ ^[=:]+$ ]] && glued=1 || glued=0
        line=$trimmed
        if [[ $line == "$w"* ]]; then
            piece=$w
        else
            piece=$line
        fi
        if ((i == COMP_CWORD)); then
            # Keep only what is left of the cursor.
            words[${#words[@]} - 1]=${words[${#words[@]} - 1]%"$w"}$piece
            cword=$((${#words[@]} - 1))
            break
        fi
        line=${line:${#piece}}
    done
}

# A multi-file plugin's own bash completion (its completions/app-NAME.bash,
# which registers a function with `complete -F FUNC app-NAME`): loaded, and
# run on the words after the plugin's name, as if app-NAME were typed.
__app_plugin_script() {
    local file=$1 cmd=$2 n=$3 spec
    source "$file" 2>/dev/null || return 1
    spec=$(complete -p "$cmd" 2>/dev/null) || return 1
    [[ $spec =~ -F\ ([^ ]+) ]] || return 1
    local func=${BASH_REMATCH[1]}
    local -a COMP_WORDS=("$cmd" "${words[@]:1+n}")
    local COMP_CWORD=$((cword - n))
    local COMP_LINE="${COMP_WORDS[*]}"
    local COMP_POINT=${#COMP_LINE}
    COMPREPLY=()
    "$func" "$cmd" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
}

_app() {
    local words cword
    __app_words
    local cur=${words[cword]}
    local out
    out=$(APP_COMPLETION_SHELL=bash "${words[0]}" __complete "${words[@]:1:cword}" 2>/dev/null) || return 0
    local directive=0 line
    local -a cands=()
    if [[ $out == *$'\n:'* ]] && ((${out##*:} & 64)); then
        line=${out%%$'\n'*}
        local rest=${line#*$'\t'}
        __app_plugin_script "${line%%$'\t'*}" "${rest% *}" "${rest##* }"
        return 0
    fi
    while IFS= read -r line; do
        if [[ $line =~ ^:[0-9]+$ ]]; then
            directive=${line#:}
        elif [[ -n $line ]]; then
            cands+=("${line%%$'\t'*}")
        fi
    done <<<"$out"
    if ((directive & 1)); then
        compopt +o default 2>/dev/null
        return 0
    fi
    ((directive & 2)) && compopt -o nospace 2>/dev/null
    ((directive & 32)) && compopt -o nosort 2>/dev/null
    # Bash replaces only the part of the word after its last `=` or `:`.
    local cut=${cur%"${cur##*[=:]}"} c
    COMPREPLY=()
    for c in "${cands[@]}"; do
        [[ $c == "$cur"* ]] || continue
        c=${c#"$cut"}
        COMPREPLY+=("$(printf '%q' "$c")")
    done
    if ((${#COMPREPLY[@]} == 0)) && ((directive & 4)); then
        compopt +o default 2>/dev/null
    fi
    return 0
}

complete -o default -F _app app
