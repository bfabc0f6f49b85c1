#!/usr/bin/env bash
# The classic master pipeline the source describes (analyze_dump, group_sum, join with
# current_log, filter_url, domains_from_db join, logsaver), with GNU sort, join and awk: the
# baseline focuser's master replaces. Usage: classic.sh REFLOG CURRENT_LOG DOMAIN_MAP NOW WORKDIR
# CURRENT_LOG: url \t fwd_ts \t tag \t pending \t last_seen (sorted by url, C locale)
# DOMAIN_MAP:  domain \t node (sorted by domain)
set -euo pipefail
reflog=$1 current=$2 domain_map=$3 now=$4 work=$5
export LC_ALL=C
mkdir -p "$work/queue"
S="-S 512M --parallel=2 -T $work"

# analyze_dump: check and split each line; the URL (fragment cut) stands for its id.
tail -n +2 "$reflog" | gawk -F'\t' -v OFS='\t' '
    NF >= 6 && NF <= 7 && $3 ~ /^[0-9]{14}$/ && $6 ~ /^[0-9]+$/ && $5 ~ /^https?:\/\/[^\/]/ {
        url = $5; sub(/#.*/, "", url)
        host = url; sub(/^[a-zA-Z]+:\/\//, "", host); sub(/[\/:?].*/, "", host)
        host = tolower(host); sub(/^www\./, "", host)
        # YYYYMMDDhhmmss to seconds (UTC)
        ts = mktime(substr($3,1,4) " " substr($3,5,2) " " substr($3,7,2) " " substr($3,9,2) " " substr($3,11,2) " " substr($3,13,2), 1)
        print url, ts, $6, $7, host
        next
    }
    { rejected++ }
    END { print rejected + 0 > "/dev/stderr" }' 2>"$work/rejected" >"$work/analyzed"

# sort by id (url) and time, then group_sum: hits summed, latest time, last non-empty tag.
sort $S -t$'\t' -k1,1 -k2,2n "$work/analyzed" >"$work/sorted"
gawk -F'\t' -v OFS='\t' '
    $1 != url { if (url != "") print url, ts, hits, tag, dom; url = $1; hits = 0; tag = "" }
    { ts = $2; hits += $3; if ($4 != "") tag = $4; dom = $5 }
    END { if (url != "") print url, ts, hits, tag, dom }' "$work/sorted" >"$work/incoming_log"

# join with current_log and filter_url.
join -t$'\t' -a 1 -a 2 -e NONE -o 0,1.2,1.3,1.4,1.5,2.2,2.3,2.4,2.5 "$work/incoming_log" "$current" |
gawk -F'\t' -v OFS='\t' -v now="$now" -v window=3600 -v retention=36000 -v cur="$work/current_log.new" -v fwd="$work/filtered" '
    {
        url = $1; its = $2; ihits = $3; itag = $4; dom = $5; fts = $6; ftag = $7; pend = $8; seen = $9
        if (itag == "NONE") itag = ""; if (ftag == "NONE") ftag = ""
        if (fts == "NONE") { print url, its, itag, 0, its > cur; print url, its, ihits, itag, dom > fwd; next }
        if (its == "NONE") { if (now - seen < retention) print url, fts, ftag, pend, seen > cur; next }
        if (its > seen) seen = its
        changed = (itag != "" && itag != ftag)
        if (changed || its - fts >= window) {
            t = (itag != "" ? itag : ftag)
            print url, its, t, 0, seen > cur; print url, its, pend + ihits, t, dom > fwd
        } else print url, fts, ftag, pend + ihits, seen > cur
    }'

# domains_from_db: route by domain; unmapped domains go round-robin to the nodes.
sort $S -t$'\t' -k5,5 "$work/filtered" >"$work/filtered_by_domain"
join -t$'\t' -1 5 -2 1 -a 1 -e NONE -o 1.1,1.2,1.3,1.4,0,2.2 "$work/filtered_by_domain" "$domain_map" |
gawk -F'\t' -v OFS='\t' -v q="$work/queue" '
    BEGIN { nodes = 8 }
    {
        node = $6
        if (node == "NONE") { if (!($5 in assigned)) assigned[$5] = (n++ % nodes) + 1; node = assigned[$5] }
        print $1, $5, $2, $3, $4 > (q "/node-" node ".q")
    }'
wc -l "$work"/queue/*.q | tail -n 1 | awk '{ print $1 }' >"$work/forwarded"
