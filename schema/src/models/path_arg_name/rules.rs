//! The significance rules as the loader and the qargfilter import use them, in bulk.

use chrono::NaiveDateTime;
use diesel::mysql::Mysql;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Bool, Datetime, Double, Text, Unsigned};

use super::PathArgName;
use crate::models::query_arg::INSIGNIFICANT_SCORE;
use crate::models::sql;

/// Rows per statement, far below the protocol's 65 535 parameters.
const MAX_ROWS: usize = 4000;

/// One rule, as a batch lookup returns it.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub struct ArgRule {
    #[diesel(sql_type = Unsigned<BigInt>)]
    pub path_hash: u64,
    #[diesel(sql_type = Text)]
    pub name: String,
    #[diesel(sql_type = Bool)]
    pub significant: bool,
}

impl PathArgName {
    /// Every rule of the paths in `paths` (duplicates allowed).
    pub fn rules_for_paths(conn: &mut MysqlConnection, paths: &[u64]) -> QueryResult<Vec<ArgRule>> {
        let mut out = Vec::new();
        for chunk in paths.chunks(MAX_ROWS) {
            let mut q = diesel::sql_query(sql::repeat(
                include_str!("rules_for_paths.sql"),
                chunk.len(),
            ))
            .into_boxed::<Mysql>();
            for p in chunk {
                q = q.bind::<Unsigned<BigInt>, _>(*p);
            }
            out.extend(q.load::<ArgRule>(conn)?);
        }
        Ok(out)
    }

    /// Inserts `(path_hash, name)` rules as significant where no rule exists yet; returns
    /// how many were new. Pass each pair once.
    pub fn insert_significant(
        conn: &mut MysqlConnection,
        rules: &[(u64, &str)],
        now: NaiveDateTime,
    ) -> QueryResult<usize> {
        let mut sorted: Vec<&(u64, &str)> = rules.iter().collect();
        sorted.sort();
        let mut inserted = 0;
        for chunk in sorted.chunks(MAX_ROWS) {
            let mut q = diesel::sql_query(sql::repeat(
                include_str!("insert_significant.sql"),
                chunk.len(),
            ))
            .into_boxed::<Mysql>();
            for (path_hash, name) in chunk {
                q = q
                    .bind::<Unsigned<BigInt>, _>(*path_hash)
                    .bind::<Text, _>(*name)
                    .bind::<Datetime, _>(now);
            }
            inserted += q.execute(conn)?;
        }
        Ok(inserted)
    }

    /// The qargfilter import: every `query_args` score computed at or after `since` replaces
    /// its rule (score >= [`INSIGNIFICANT_SCORE`] → insignificant). Returns the affected-rows
    /// count (1 a new rule, 2 a replaced one, 0 one that was already so).
    pub fn import_query_args(
        conn: &mut MysqlConnection,
        since: NaiveDateTime,
        now: NaiveDateTime,
    ) -> QueryResult<usize> {
        diesel::sql_query(include_str!("import_query_args.sql"))
            .bind::<Double, _>(INSIGNIFICANT_SCORE)
            .bind::<Datetime, _>(now)
            .bind::<Datetime, _>(since)
            .execute(conn)
    }
}
