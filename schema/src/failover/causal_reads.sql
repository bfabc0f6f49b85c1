SET SESSION wsrep_sync_wait = 1
