# bash completion for lookup(1), the command-line tool of CallerID.
# Installed as PREFIX/share/bash-completion/completions/lookup (tools/install.sh); or source it.
# Works with or without the bash-completion package. The option lists are checked against
# 'lookup COMMAND --help' by Tests/CallerIDTests/ManPageTests.swift.

# The options of a command ("" is 'lookup NUMBER' and 'lookup -').
_lookup_options() {
    case $1 in
        build)
            echo "-o --output --skip-bad-rows --block-size --raw-labels --labels --hidden-characters --memory --json" \
                "--preset --format --delimiter --encoding --header" \
                "--number-field --label-field --category-field --weight-field --region-field --country-field" \
                "--range-end-field --number-prefix-field --pad-number" \
                "--country --numbering-plan --validity --number-rules --keep-ranges --max-range-expansion --max-expanded-total" \
                "--label-replace --max-label-bytes --category-map --category" \
                "--split-by --region-map --region-after --block-list --max-entries --top --top-only --dataset-version" \
                "--errors --max-bad-rows --progress --no-progress --help" ;;
        dump)    echo "--db --from --category --action --json --help" ;;
        verify)  echo "--json --help" ;;
        info)    echo "--db --json --help" ;;
        install) echo "--store --slots --max-entries --allow --rule --no-rules --block-categories --trust --require-signature" \
                      "--source --regions --priority --json --help" ;;
        keygen)  echo "-o --help" ;;
        sign)    echo "--key --help" ;;
        join)    echo "-o --output --dataset-version --json --help" ;;
        reports)
            echo "-o --output --format --delimiter --encoding --header" \
                "--number-field --reporter-field --time-field --category-field --country-field --region-field" \
                "--country --numbering-plan --validity --number-rules --category-map --category" \
                "--half-life --max-age --now --reporter-daily-cap --safe-weight --block-score --min-reporters --protect" \
                "--label --protected-label --label-language" \
                "--split-by --region-map --region-after --max-entries --dataset-version --previous --memory" \
                "--errors --max-bad-rows --skip-bad-rows --progress --no-progress --json --records --help" ;;
        fetch)   echo "--store --trust --allow-downgrade --slots --max-entries --min-rate --grace --source --regions --priority" \
                      "--list --json --help" ;;
        store)   echo "--store --source --regions --json --help" ;;
        feed)    echo "--store --slot --max-entries --chunk --simulate --from-previous --model-os-cap --json --help" ;;
        diff)    echo "--json --help" ;;
        export)  echo "--live-caller-id --db --cache-expiry-minutes --identity-category --icons --text --json --help" ;;
        serve)   echo "--db --store --listen --country --access-log --log-numbers --cnam-block-prefix --cnam-max-chars --threads" \
                      "--max-connections --request-timeout --max-header-bytes --max-body-bytes --drain-timeout --json --help" \
                      "--keys --add-key --may --rate --burst --trust-proxy --open --reports-dir --reports-segment-bytes --tls-cert --tls-key" ;;
        *)       echo "--db --country --json --help" ;;
    esac
}

# Completes $1 with files (or directories, with $2 = -d), names escaped as paths.
_lookup_paths() {
    local IFS=$'\n'
    compopt -o filenames 2>/dev/null
    if [[ $2 == -d ]]; then
        COMPREPLY+=($(compgen -d -- "$1"))
    else
        COMPREPLY+=($(compgen -f -- "$1"))
    fi
}

_lookup() {
    local cur=${COMP_WORDS[COMP_CWORD]}
    local prev=
    (( COMP_CWORD > 0 )) && prev=${COMP_WORDS[COMP_CWORD-1]}
    COMPREPLY=()

    # A value written after '=' (one word, or split at '=' by COMP_WORDBREAKS).
    if [[ $cur == --*=* ]]; then
        prev=${cur%%=*}
        cur=${cur#*=}
    elif [[ $cur == = && $prev == --* ]]; then
        cur=
    elif [[ $prev == = ]] && (( COMP_CWORD > 1 )); then
        prev=${COMP_WORDS[COMP_CWORD-2]}
    fi

    # The value of the option before the cursor.
    case $prev in
        --db|-o|--output|--allow|--numbering-plan|--category-map|--region-map|--errors|--records|--trust|--require-signature|--key|--keys|--tls-cert|--tls-key|--access-log)
            _lookup_paths "$cur"; return ;;
        --store|--live-caller-id|--icons|--reports-dir)
            _lookup_paths "$cur" -d; return ;;
        --preset)   COMPREPLY=($(compgen -W "rossvyaz rossvyaz-regions" -- "$cur")); return ;;
        --format)   COMPREPLY=($(compgen -W "tsv csv json jsonl" -- "$cur")); return ;;
        --header)   COMPREPLY=($(compgen -W "auto yes no" -- "$cur")); return ;;
        --encoding) COMPREPLY=($(compgen -W "utf-8 utf-16 utf-16le utf-16be windows-1251 windows-1252 iso-8859-1 koi8-r" -- "$cur")); return ;;
        --split-by) COMPREPLY=($(compgen -W "field prefix" -- "$cur")); return ;;
        --validity) COMPREPLY=($(compgen -W "plausible possible valid any" -- "$cur")); return ;;
        --number-rules) COMPREPLY=($(compgen -W "auto libphonenumber table" -- "$cur")); return ;;
        --block-list) COMPREPLY=($(compgen -W "combined separate" -- "$cur")); return ;;
        --action)   COMPREPLY=($(compgen -W "identify block" -- "$cur")); return ;;
        --hidden-characters) COMPREPLY=($(compgen -W "remove refuse" -- "$cur")); return ;;
        --labels) COMPREPLY=($(compgen -W "auto lz4 symbols" -- "$cur")); return ;;
        --block-size|--memory|--from|--category|--slots|--max-entries|--rule|--block-categories|--slot|--chunk|\
        --model-os-cap|--cache-expiry-minutes|--identity-category|--delimiter|--number-field|--label-field|\
        --category-field|--weight-field|--region-field|--country-field|--range-end-field|\
        --number-prefix-field|--pad-number|--country|--max-range-expansion|--max-expanded-total|\
        --label-replace|--max-label-bytes|--region-after|--top|--dataset-version|--max-bad-rows|--min-rate|--grace|\
        --source|--regions|--priority|--reporter-field|--time-field|--half-life|--max-age|--now|--reporter-daily-cap|\
        --safe-weight|--block-score|--min-reporters|--label|--protected-label|\
        --listen|--cnam-block-prefix|--cnam-max-chars|--add-key|--may|--rate|--burst|--reports-segment-bytes|--threads|--max-connections|--request-timeout|--max-header-bytes|--max-body-bytes|--drain-timeout)
            return ;;  # a value nothing can guess
    esac

    local commands="build join reports dump verify info install keygen sign fetch store feed diff export serve"
    if (( COMP_CWORD == 1 )); then
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "- --db --country --json --help --version" -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$commands" -- "$cur"))
        fi
        return
    fi

    local command=${COMP_WORDS[1]}
    case " $commands " in
        *" $command "*) ;;
        *) command= ;;
    esac
    if [[ $cur == -?* ]]; then
        COMPREPLY=($(compgen -W "$(_lookup_options "$command")" -- "$cur"))
        return
    fi
    case $command in
        store) (( COMP_CWORD == 2 )) && COMPREPLY=($(compgen -W "list remove" -- "$cur")) ;;
        build|reports|verify|info) _lookup_paths "$cur" ;;      # inputs, databases or directories
        install|diff|sign|join) _lookup_paths "$cur" -d ;;   # build directories and stores
    esac
}

complete -F _lookup lookup
