SHOW STATUS LIKE 'wsrep_ready'
