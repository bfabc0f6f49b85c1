// @generated automatically by Diesel CLI.

diesel::table! {
    /// ad dictionaries loaded, one row per load; the newest of a kind is in force
    binding_dict (id) {
        /// the load
        id -> Unsigned<Integer>,
        /// 1 direct, 2 market, 3 media (the ad-server item type codes)
        kind -> Unsigned<Tinyint>,
        /// 64 bits of the MD5 of the normalised content, 16 hex digits (focuser_bind::dict)
        #[max_length = 16]
        version -> Char,
        /// when it was loaded (UTC)
        loaded_at -> Datetime,
        /// the file it was loaded from (its name, for people)
        #[max_length = 255]
        file_name -> Varchar,
        /// its phrases (binding_dict_phrase rows)
        phrases -> Unsigned<Integer>,
        /// hex MD5 of the file's bytes
        #[max_length = 32]
        checksum -> Char,
    }
}

diesel::table! {
    /// the phrases of each dictionary loaded
    binding_dict_phrase (dict_id, line) {
        /// binding_dict.id
        dict_id -> Unsigned<Integer>,
        /// the phrase's line in the file
        line -> Unsigned<Integer>,
        /// the phrase as the file writes it (trimmed, white space collapsed): what is delivered
        #[max_length = 255]
        phrase -> Varchar,
        /// its stems as the tokenizer makes them, separated by spaces (what pages are matched on)
        #[max_length = 1024]
        stems -> Varchar,
        /// advertisers bidding on it (direct; 0 otherwise)
        advertisers -> Unsigned<Integer>,
        /// the catalog category it points at, if any
        #[max_length = 64]
        category -> Nullable<Varchar>,
    }
}

diesel::table! {
    /// the current binding of each URL
    binding_page (id) {
        /// url.id of the page (the doc id of its items)
        id -> Unsigned<Bigint>,
        /// hex MD5 of item: the last binding shipped for the page
        #[max_length = 32]
        md5 -> Char,
        /// the binding's ad-server item (docs/formats.md "Ad-server items"), its canonical form
        item -> Mediumtext,
        /// the tragic filter's flag: 1 no contextual phrases
        tragic -> Unsigned<Tinyint>,
        /// phrases bound, all types together
        phrases -> Unsigned<Integer>,
        /// kind:version of each dictionary it was bound with, comma-separated
        #[max_length = 128]
        dict_versions -> Varchar,
        /// when this binding was made (UTC)
        bound_at -> Datetime,
    }
}

diesel::table! {
    /// how far the bindings store is reflected in binding_page
    binding_position (node, store) {
        /// the yacobot node (its node key)
        #[max_length = 64]
        node -> Varchar,
        /// the bindings store (Bindings.Dir, resolved)
        #[max_length = 512]
        store -> Varchar,
        /// segment file id: the store's items before this place are in binding_page (0: the oldest segment)
        file_id -> Unsigned<Bigint>,
        /// its item index (from 1)
        item_idx -> Unsigned<Integer>,
        /// when it last moved (UTC)
        updated_at -> Datetime,
    }
}

diesel::table! {
    /// the crawl's record per host (srv.db)
    host (name) {
        /// the host and its port, always written: a.example:80, [::1]:8443 (a normalised URL's host: ASCII)
        #[max_length = 260]
        name -> Varchar,
        /// pages fetched from it (2xx of an allowed type), in all
        documents -> Unsigned<Bigint>,
        /// body bytes of its answers to page requests, in all
        bytes -> Unsigned<Bigint>,
        /// bytes per second of its last answers: a moving average giving each booking batch's figure (its answers' bytes over their transfer time) a weight of 1/4; NULL before its first answer
        bps -> Nullable<Double>,
        /// the Server header of its last answer that had one
        #[max_length = 255]
        server -> Nullable<Varchar>,
        /// requests that failed (network, timeout, 5xx, 429, robots.txt unavailable, address refused …), in all
        errors -> Unsigned<Integer>,
        /// requests that failed since it last answered one
        errors_in_row -> Unsigned<Integer>,
        /// the last failure: kind and reason
        #[max_length = 255]
        last_error -> Nullable<Varchar>,
        /// when (UTC)
        last_error_at -> Nullable<Datetime>,
        /// when it last answered a request (UTC): fetched, gone, too large or of a wrong type
        last_answer_at -> Nullable<Datetime>,
        /// the politeness in force: least time between two request starts, ms
        delay_ms -> Nullable<Unsigned<Integer>>,
        /// where delay_ms comes from: 1 Fetch.HostDelay, 2 the robots.txt Crawl-delay
        delay_source -> Nullable<Unsigned<Tinyint>>,
        /// when robots.txt was last fetched (UTC)
        robots_fetched_at -> Nullable<Datetime>,
        /// trusted until then (UTC): Fetch.RobotsTtl after it, Fetch.RobotsRetry after a 5xx or no answer
        robots_expires -> Nullable<Datetime>,
        /// the HTTP status of its answer; NULL: no answer (unreachable, address refused)
        robots_status -> Nullable<Unsigned<Smallint>>,
        /// hex MD5 of the file (a 2xx answer, up to 512 KiB read)
        #[max_length = 32]
        robots_md5 -> Nullable<Char>,
        /// the file's length in bytes
        robots_bytes -> Nullable<Unsigned<Integer>>,
        /// the file itself when at most Hosts.RobotsBytes: a restart takes it instead of fetching it; NULL: longer, or not a 2xx
        robots_txt -> Nullable<Mediumblob>,
        /// when the row was last written (UTC)
        updated_at -> Datetime,
    }
}

diesel::table! {
    /// per-master watermarks of the loader in duplicate mode
    loader_watermark (master) {
        /// the inbox (master name), as queue_applied.source
        #[max_length = 64]
        master -> Varchar,
        /// the latest header time= of the master's files handled (applied or skipped), UTC: its hits up to then are counted
        covered -> Datetime,
        /// when the loader last handled a file of the master (UTC): its progress
        handled_at -> Datetime,
    }
}

diesel::table! {
    /// template evidence per domain: pages sampled
    multidoc_domain (domain_key) {
        /// the domain's key: first 8 bytes of the MD5 of the domain name, big-endian (as a URL id)
        domain_key -> Unsigned<Bigint>,
        /// routing domain (url.domain)
        #[max_length = 253]
        domain -> Varchar,
        /// pages counted into the evidence since it began (since)
        pages -> Unsigned<Integer>,
        /// multidoc_fingerprint rows of the domain as last counted (ageing makes it an overestimate until the cap recounts)
        fingerprints -> Unsigned<Integer>,
        /// when the evidence began: its first page, or the first after it expired (UTC)
        since -> Datetime,
        /// the day a page was last counted (UTC); MultiDoc.ExpireDays before today: expired
        seen_on -> Date,
    }
}

diesel::table! {
    /// template evidence per domain: pages each block was seen on
    multidoc_fingerprint (domain_key, fingerprint) {
        /// multidoc_domain.domain_key
        domain_key -> Unsigned<Bigint>,
        /// XXH3-64 of a block's normalised text and tag path (docs/multidoc.md)
        fingerprint -> Unsigned<Bigint>,
        /// pages of the domain the block was on (once a page)
        pages -> Unsigned<Integer>,
        /// the domain's page count when the block was last seen (the cap evicts the fewest pages, then the oldest)
        last_page -> Unsigned<Integer>,
        /// the day the block was last seen (UTC); MultiDoc.ExpireDays before today: expired
        seen_on -> Date,
    }
}

diesel::table! {
    /// duplicate groups: pages of a domain whose main text is the same or near
    multidoc_group (id) {
        /// the group: XXH3-64 of its domain_key and simhash (8 bytes each, big-endian)
        id -> Unsigned<Bigint>,
        /// multidoc_domain.domain_key of its pages: groups are per routing domain
        domain_key -> Unsigned<Bigint>,
        /// the group's text: the main_simhash of its first page
        simhash -> Unsigned<Bigint>,
        /// bits 63-48 of simhash
        band0 -> Unsigned<Smallint>,
        /// bits 47-32 of simhash
        band1 -> Unsigned<Smallint>,
        /// bits 31-16 of simhash
        band2 -> Unsigned<Smallint>,
        /// bits 15-0 of simhash
        band3 -> Unsigned<Smallint>,
        /// url.id of the page whose categories and binding the group's pages share: its first page; when that one leaves, the group's smallest url.id
        rep -> Unsigned<Bigint>,
        /// when its first page was analysed (UTC)
        created_at -> Datetime,
    }
}

diesel::table! {
    /// what the page analysis made of each URL
    multidoc_page (id) {
        /// url.id of the page
        id -> Unsigned<Bigint>,
        /// 1 analysed, 2 empty, 3 binary, 4 too large (MultiDoc.MaxBytes)
        outcome -> Unsigned<Tinyint>,
        /// language of the main text: ru, en, cjk, other, unknown; NULL: not analysed
        #[max_length = 8]
        lang -> Nullable<Varchar>,
        /// category path from the root: catalog id:posterior, comma-separated (docs/formats.md); NULL: no model
        categories -> Nullable<Text>,
        /// the same path's names joined by " > ", for people
        category_names -> Nullable<Text>,
        /// hex MD5 of the main text (UTF-8); NULL: not analysed
        #[max_length = 32]
        main_md5 -> Nullable<Char>,
        /// 64-bit SimHash of the main text's word 3-shingles: near-duplicates are at most 3 bits apart; NULL: not analysed, or no word in the main text
        main_simhash -> Nullable<Unsigned<Bigint>>,
        /// multidoc_group.id of the page's group (its representative's too); NULL: not analysed, or no word in its main text
        dup_group -> Nullable<Unsigned<Bigint>>,
        /// share of the blocks' text the domain's evidence calls template (0-1); NULL: not analysed
        template_share -> Nullable<Float>,
        /// CRC-32C of the model file that classified the page; NULL: no model
        model_checksum -> Nullable<Unsigned<Integer>>,
        /// when the page was last analysed (UTC)
        analysed_at -> Datetime,
        /// when the page was counted into its domain's evidence; NULL: never (not analysed)
        counted_at -> Nullable<Datetime>,
        /// segment file id of the archived copy analysed
        archive_file -> Unsigned<Bigint>,
        /// item index of that copy in its segment (from 1)
        archive_item -> Unsigned<Integer>,
    }
}

diesel::table! {
    /// where the page analysis is in each archive
    multidoc_position (node, store) {
        /// the yacobot node (its node key)
        #[max_length = 64]
        node -> Varchar,
        /// the archive folder followed (Archive.Dir, resolved)
        #[max_length = 512]
        store -> Varchar,
        /// segment file id of the next item to analyse (0: the oldest segment)
        file_id -> Unsigned<Bigint>,
        /// its item index (from 1)
        item_idx -> Unsigned<Integer>,
        /// the items before this position were counted into the evidence: a rewind moves file_id/item_idx back, not this, and the items it analyses again are not counted again
        counted_file -> Unsigned<Bigint>,
        /// its item index
        counted_item -> Unsigned<Integer>,
        /// when the position last moved (UTC)
        updated_at -> Datetime,
    }
}

diesel::table! {
    /// how items are cut out of a resource class's XML
    open_xml_format (id) {
        /// rule id
        id -> Unsigned<Integer>,
        /// resource class the rule belongs to (vr_resource.class_id)
        class_id -> Unsigned<Integer>,
        /// field name in the item
        #[max_length = 128]
        label_name -> Varchar,
        /// element that encloses one item, e.g. item or channel/item
        #[max_length = 255]
        parent_label -> Varchar,
        /// path of the field below the item element; empty: label_name
        #[max_length = 512]
        xpath -> Varchar,
        /// 1: the field is the item key (vr_data.keyword)
        is_key -> Bool,
        /// 1: the field is indexed
        is_index -> Bool,
        /// 1: a query must match the field in full
        is_fullhit -> Bool,
        /// 1: the field is an annotation shown with the result
        is_mark -> Bool,
        /// 1: an item without the field fails validation
        is_required -> Bool,
        /// 0 keyword index, 1 full-text index
        index_type -> Unsigned<Tinyint>,
        /// 0 none; 1-3 grouping of repeated fields
        group_type -> Unsigned<Tinyint>,
    }
}

diesel::table! {
    /// which crawler node owns a domain (one row per domain)
    partner_domain (domain) {
        /// host lower-cased, IDN in punycode, leading www. removed
        #[max_length = 253]
        domain -> Varchar,
        /// yacobot_node.id that owns the domain
        yacobot_id -> Unsigned<Integer>,
        /// who assigned it: a master name (least-loaded rule) or admin:<user>
        #[max_length = 64]
        assigned_by -> Varchar,
        /// first assignment (UTC)
        created_at -> Datetime,
        /// last (re-)assignment (UTC)
        updated_at -> Datetime,
    }
}

diesel::table! {
    /// significance of each query argument per path
    path_arg_name (path_hash, name) {
        /// hash of host + path without query (as url.path_hash)
        path_hash -> Unsigned<Bigint>,
        /// query argument name as it appears in the URL (percent-encoded)
        #[max_length = 255]
        name -> Varchar,
        /// 1: keep the argument in the URL; 0: drop it
        significant -> Bool,
        /// when the rule was written (UTC)
        updated_at -> Datetime,
    }
}

diesel::table! {
    /// the path binder's stubs and query_args items, as last shipped
    path_stub (id) {
        /// the item's key: the section's id (stub) or the host's id (query_args), first 8 bytes of the MD5 of its name, big-endian
        id -> Unsigned<Bigint>,
        /// 1 a section's stub, 2 a host's insignificant query arguments
        kind -> Unsigned<Tinyint>,
        /// routing domain (url.domain) of the pages it was made from
        #[max_length = 253]
        domain -> Varchar,
        /// the host (with a non-default port)
        #[max_length = 255]
        host -> Varchar,
        /// the section's path prefix, from / and ending in / (empty for query_args)
        #[max_length = 1024]
        prefix -> Varchar,
        /// the section's bound pages the stub was made from (query_args: the arguments)
        urls -> Unsigned<Integer>,
        /// hex MD5 of item: what was last shipped
        #[max_length = 32]
        md5 -> Char,
        /// the ad-server item (docs/formats.md "Ad-server items"), its canonical form
        item -> Mediumtext,
        /// when this item was built (UTC)
        built_at -> Datetime,
    }
}

diesel::table! {
    /// one row per fetch run of a resource
    process_timestamp (id) {
        /// run id
        id -> Unsigned<Bigint>,
        /// vr_resource.id
        res_id -> Unsigned<Integer>,
        /// 1: started by manual_update
        is_manual -> Bool,
        /// 2 running, 1 ok, 4 error (as vr_resource.fetch_status)
        status -> Unsigned<Tinyint>,
        /// fetch stage start (UTC)
        fetch_start -> Nullable<Datetime>,
        /// fetch stage end (UTC)
        fetch_end -> Nullable<Datetime>,
        /// write stage start (UTC)
        write_start -> Nullable<Datetime>,
        /// write stage end (UTC)
        write_end -> Nullable<Datetime>,
        /// items cut out of the feed
        items -> Unsigned<Integer>,
        /// new items
        inserted -> Unsigned<Integer>,
        /// changed items
        updated -> Unsigned<Integer>,
        /// items marked deleted
        deleted -> Unsigned<Integer>,
        /// items without their key or a required field
        failed_keys -> Unsigned<Integer>,
        /// resources segment file where the run began emitting; NULL: nothing to emit yet
        emit_file -> Nullable<Unsigned<Bigint>>,
        /// item index in that file (from 1) of the first item the run may have emitted
        emit_item -> Nullable<Unsigned<Integer>>,
    }
}

diesel::table! {
    /// probe URLs for query arguments with too little evidence
    query_arg_probe (path_hash, name, id) {
        /// the path (url.path_hash)
        path_hash -> Unsigned<Bigint>,
        /// the query argument the probe drops (percent-encoded)
        #[max_length = 255]
        name -> Varchar,
        /// the probe URL's id (url.id once taken)
        id -> Unsigned<Bigint>,
        /// the probe URL: a page of the path without the argument
        #[max_length = 2048]
        url -> Varchar,
        /// routing domain (url.domain)
        #[max_length = 253]
        domain -> Varchar,
        /// when qargfilter asked for it (UTC)
        queued_at -> Datetime,
        /// when a crawler took it into url to fetch it (UTC); NULL: waiting
        taken_at -> Nullable<Datetime>,
    }
}

diesel::table! {
    /// output of the query-argument analysis (qargfilter)
    query_args (path_hash, name) {
        /// hash of host + path without query
        path_hash -> Unsigned<Bigint>,
        /// query argument name (percent-encoded)
        #[max_length = 255]
        name -> Varchar,
        /// probability that the argument does not change the page; >= 0.95 makes it insignificant
        score -> Double,
        /// when qargfilter computed the score (UTC)
        computed_at -> Datetime,
        /// pairs of analysed pages of the path that differ only in this argument
        pairs -> Unsigned<Integer>,
        /// of those, pairs whose main texts are equal or near-equal
        equal_pairs -> Unsigned<Integer>,
    }
}

diesel::table! {
    /// queue files already loaded: makes loading exactly-once
    queue_applied (source, file_name) {
        /// the inbox (master name) the queue file came from
        #[max_length = 64]
        source -> Varchar,
        /// queue file name, e.g. master1-000042.q
        #[max_length = 255]
        file_name -> Varchar,
        /// when the loader committed it (UTC)
        applied_at -> Datetime,
        /// URL records the file held
        row_count -> Unsigned<Integer>,
        /// 1: not applied: another master's files had counted its period (Loader.Mode = duplicate)
        skipped -> Bool,
    }
}

diesel::table! {
    /// every feed URL of a resource
    resource_status (id) {
        /// feed URL id (vr_data.status_id)
        id -> Unsigned<Bigint>,
        /// vr_resource.id
        res_id -> Unsigned<Integer>,
        /// vr_open_datasource.id that lists the URL
        data_source_id -> Unsigned<Integer>,
        /// feed URL (shorter than 255 bytes by the sitemap rules)
        #[max_length = 255]
        url -> Varchar,
        /// 1 listed in the sitemap, 0 retired (no longer listed)
        res_status -> Unsigned<Tinyint>,
        /// last fetch attempt (UTC)
        last_fetch -> Nullable<Datetime>,
        /// HTTP status of the last fetch
        http_status -> Nullable<Unsigned<Smallint>>,
        /// items cut out of the last fetch
        items -> Unsigned<Integer>,
        /// reason of the last failure; NULL after a success
        #[max_length = 255]
        error -> Nullable<Varchar>,
    }
}

diesel::table! {
    /// page frontier of a crawler node
    url (id) {
        /// 64-bit URL id: first 8 bytes of MD5 of the normalised URL, big-endian
        id -> Unsigned<Bigint>,
        /// normalised URL with insignificant query arguments removed
        #[max_length = 2048]
        #[sql_name = "url"]
        address -> Varchar,
        /// routing domain (see partner_domain.domain)
        #[max_length = 253]
        domain -> Varchar,
        /// hash of host + path without query; key into path_arg_name
        path_hash -> Unsigned<Bigint>,
        /// hits received since the URL was last indexed
        hits -> Unsigned<Integer>,
        /// scheduling priority: hits, x3 (NEW_URL_BOOST) while never downloaded; 0 after indexing
        download_prio -> Unsigned<Bigint>,
        /// last non-empty updatetag from the reflog; a change makes the URL due now
        #[max_length = 64]
        updatetag -> Varchar,
        /// when a queue file first brought the URL (UTC)
        first_seen -> Datetime,
        /// latest reflog timestamp of a hit (UTC)
        last_hit -> Datetime,
        /// last successful download (UTC); NULL: never downloaded
        last_downloaded -> Nullable<Datetime>,
        /// last time the URL was indexed, downloaded or from the archive (UTC)
        last_indexed -> Nullable<Datetime>,
        /// not re-indexed before this time (UTC)
        next_indexed -> Datetime,
        /// days the content is expected to stay unchanged; adapts to content_md5 changes
        steady_level -> Double,
        /// HTTP status of the last fetch; NULL: never fetched
        http_status -> Nullable<Unsigned<Smallint>>,
        /// hex MD5 of the last downloaded body
        #[max_length = 32]
        content_md5 -> Nullable<Char>,
        /// doc id in the item/index segments (hex of id)
        #[max_length = 64]
        doc_id -> Nullable<Varchar>,
        /// 0 idle, 1 claimed, 2 fetched, 3 failed, 4 gone (404/410)
        fetch_state -> Unsigned<Tinyint>,
        /// worker holding the claim (node/pid); NULL: not claimed
        #[max_length = 64]
        claimed_by -> Nullable<Varchar>,
        /// the claim lapses after this time and the URL may be taken again (UTC)
        claim_expires -> Nullable<Datetime>,
        /// consecutive failed fetches
        errors -> Unsigned<Smallint>,
        /// duration of the last fetch in milliseconds
        fetch_ms -> Nullable<Unsigned<Integer>>,
        /// segment file id of the last archived copy (UPDATE item); NULL: none
        archive_file -> Nullable<Unsigned<Bigint>>,
        /// item index of that copy in its segment (from 1)
        archive_item -> Nullable<Unsigned<Integer>>,
        /// last fetch attempt, whatever its outcome (UTC)
        last_fetch -> Nullable<Datetime>,
        /// kind and reason of the last failed fetch; NULL after a success
        #[max_length = 255]
        fetch_error -> Nullable<Varchar>,
        /// to be withdrawn downstream (a DELETE item), then removed: 1 merged into its canonical URL, 2 expired; NULL: live
        withdraw -> Nullable<Unsigned<Tinyint>>,
    }
}

diesel::table! {
    /// one row per feed item
    vr_data (id) {
        /// item row id
        id -> Unsigned<Bigint>,
        /// vr_resource.id
        res_id -> Unsigned<Integer>,
        /// resource_status.id of the feed URL the item came from
        status_id -> Nullable<Unsigned<Bigint>>,
        /// vr_open_datasource.id of that URL
        data_source_id -> Nullable<Unsigned<Integer>>,
        /// the item key (is_key field)
        #[max_length = 255]
        keyword -> Varchar,
        /// optional secondary key words
        #[max_length = 255]
        optword -> Varchar,
        /// synonyms of the keyword
        #[max_length = 1024]
        synonym -> Varchar,
        /// hex MD5 of the item as emitted; decides new / changed / same
        #[max_length = 32]
        md5_sum -> Char,
        /// doc id of the item in the segments (stable across runs)
        #[max_length = 64]
        doc_id -> Varchar,
        /// 1 live, 0 deleted (gone from the feed)
        data_status -> Unsigned<Tinyint>,
        /// 0 change not yet emitted to the segments, 1 emitted
        status -> Unsigned<Tinyint>,
        /// last change: 1 insert (INSERT), 2 update (UPDATE1), 3 delete; 0 the item unchanged, its loc_id dropped (UPDATE2) or changed (UPDATE3)
        update_type -> Unsigned<Tinyint>,
        /// 1 valid, 0 failed validation
        valid_status -> Unsigned<Tinyint>,
        /// why validation failed
        #[max_length = 255]
        valid_info -> Varchar,
        /// the item as emitted to the segments
        content -> Nullable<Mediumtext>,
        /// id of the item's location in Resources.LocationFile (the source's locationlist); NULL: no location, or one the list does not know
        loc_id -> Nullable<Unsigned<Integer>>,
        /// the item's location as its feed gives it (the first value of the Resources.LocationLabel field)
        #[max_length = 255]
        location -> Varchar,
        /// multi-hit classes (class_id >= 70000000): the values of the item's is_fullhit fields, in rule order, tab-separated; NULL for other classes
        hit_field -> Nullable<Text>,
        /// first seen (UTC)
        create_date -> Datetime,
        /// last change (UTC)
        update_date -> Datetime,
    }
}

diesel::table! {
    /// data sources (sitemaps) of a resource
    vr_open_datasource (id) {
        /// data source id
        id -> Unsigned<Integer>,
        /// vr_resource.id
        res_id -> Unsigned<Integer>,
        /// name used in fetch_detail reports
        #[max_length = 255]
        name -> Varchar,
        /// sources of a resource are processed by priority, highest first
        priority -> Integer,
        /// plain URL list or XML urlset/sitemapindex
        #[max_length = 1024]
        sitemap_url -> Varchar,
        /// hex MD5 of the last sitemap processed; unchanged means skip (automatic runs)
        #[max_length = 32]
        sitemap_md5 -> Nullable<Char>,
        /// when the source was added (UTC)
        created_at -> Datetime,
    }
}

diesel::table! {
    /// partner data feeds
    vr_resource (id) {
        /// resource id (res_id elsewhere)
        id -> Unsigned<Integer>,
        /// resource class; selects its open_xml_format rules
        class_id -> Unsigned<Integer>,
        /// name shown to operators
        #[max_length = 255]
        res_name -> Varchar,
        /// group the items are indexed under
        #[max_length = 64]
        data_group -> Varchar,
        /// where the data comes from: 0 partner feed over HTTP; 4 a customer resource (its customer_resource rows in Resources.CustomerDatabase are read and written at each run); others reserved
        data_from -> Unsigned<Tinyint>,
        /// seconds between automatic runs
        frequency -> Unsigned<Integer>,
        /// 1: runs only when an operator asks (manual_update = 1)
        is_manual -> Bool,
        /// 1: run now (set by yacobot resource fetch-now), cleared after the run
        manual_update -> Bool,
        /// 1 enabled; 0 disabled (withdrawn: its items were deleted downstream); 2 withdrawal asked for, 3 removal asked for (the resources worker withdraws its items, then sets 0 or deletes the resource)
        res_status -> Unsigned<Tinyint>,
        /// higher runs first when several are due; raised to 2 by a run that finds the resource large (Resources.LargeItems live items)
        priority -> Integer,
        /// 0 never run, 1 ok, 2 running, 4 error
        fetch_status -> Unsigned<Tinyint>,
        /// short report of the last run: failed source, item counts, up to 20 failed keys
        fetch_detail -> Nullable<Text>,
        /// when the current or last run started (UTC)
        fetch_time -> Nullable<Datetime>,
        /// when the last run ended (UTC); due again at last_fetch_time + frequency
        last_fetch_time -> Nullable<Datetime>,
        /// cap on items per run; 0: no cap
        max_items -> Unsigned<Integer>,
        /// worker running the resource now (node/pid); NULL: idle
        #[max_length = 64]
        claimed_by -> Nullable<Varchar>,
        /// a claim older than this is considered dead and may be taken (UTC)
        claim_expires -> Nullable<Datetime>,
        /// when the resource was added (UTC)
        created_at -> Datetime,
    }
}

diesel::table! {
    /// a row each time a run changes a resource's item count
    vr_update_info (id) {
        /// row id
        id -> Unsigned<Bigint>,
        /// vr_resource.id
        res_id -> Unsigned<Integer>,
        /// when the run ended (UTC)
        created_at -> Datetime,
        /// run result: 1 ok, 4 error
        status -> Unsigned<Tinyint>,
        /// live items after the run
        item_count -> Unsigned<Integer>,
        /// live items before the run
        last_item_count -> Unsigned<Integer>,
        /// short explanation of the change
        #[max_length = 1024]
        detail -> Varchar,
    }
}

diesel::table! {
    /// where each crawler's withdrawal batch began in its archive
    withdraw_position (node, store) {
        /// the yacobot node (its node key)
        #[max_length = 64]
        node -> Varchar,
        /// the archive the DELETE items go to (Archive.Dir, resolved)
        #[max_length = 512]
        store -> Varchar,
        /// segment file id of the first item the batch may have appended
        file_id -> Unsigned<Bigint>,
        /// its item index (from 1)
        item_idx -> Unsigned<Integer>,
        /// when the batch was taken (UTC)
        updated_at -> Datetime,
    }
}

diesel::table! {
    /// crawler nodes the master may route domains to
    yacobot_node (id) {
        /// node id; the master writes its queue files to queue_dir/<id>/
        id -> Unsigned<Integer>,
        /// short unique node name, e.g. yb01
        #[max_length = 64]
        name -> Varchar,
        /// host:port of the node's reader --recv inbox (where sendfile ships queue files)
        #[max_length = 255]
        host -> Varchar,
        /// 1: the master routes to this node; 0: its domains are re-assigned
        enabled -> Bool,
        /// when the node was added (UTC)
        created_at -> Datetime,
    }
}

diesel::allow_tables_to_appear_in_same_query!(
    binding_dict,
    binding_dict_phrase,
    binding_page,
    binding_position,
    host,
    loader_watermark,
    multidoc_domain,
    multidoc_fingerprint,
    multidoc_group,
    multidoc_page,
    multidoc_position,
    open_xml_format,
    partner_domain,
    path_arg_name,
    path_stub,
    process_timestamp,
    query_arg_probe,
    query_args,
    queue_applied,
    resource_status,
    url,
    vr_data,
    vr_open_datasource,
    vr_resource,
    vr_update_info,
    withdraw_position,
    yacobot_node,
);
