//! Dictionaries: loaded whole in one transaction, read back by the worker per version.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use super::{BindingDict, BindingDictPhrase, NewBindingDict};
use crate::schema::{binding_dict as d, binding_dict_phrase as p};

/// Phrase rows per insert statement (six binds a row).
const PHRASE_ROWS: usize = 1000;

impl BindingDict {
    /// Stores a dictionary and its phrases (their `dict_id` is set here) in one transaction;
    /// returns its row.
    pub fn load(
        conn: &mut MysqlConnection,
        dict: &NewBindingDict<'_>,
        phrases: &mut [BindingDictPhrase],
    ) -> QueryResult<BindingDict> {
        conn.transaction(|c| {
            diesel::insert_into(d::table).values(dict).execute(c)?;
            let id: u64 = diesel::select(last_insert_id()).get_result(c)?;
            let id = u32::try_from(id).map_err(|_| diesel::result::Error::NotFound)?;
            for ph in phrases.iter_mut() {
                ph.dict_id = id;
            }
            for chunk in phrases.chunks(PHRASE_ROWS) {
                diesel::insert_into(p::table).values(chunk).execute(c)?;
            }
            d::table.find(id).select(BindingDict::as_select()).first(c)
        })
    }

    /// The dictionary in force of each kind (the newest load), by kind.
    pub fn current(conn: &mut MysqlConnection) -> QueryResult<Vec<BindingDict>> {
        let mut out = Vec::new();
        for kind in 1u8..=3 {
            if let Some(row) = d::table
                .filter(d::kind.eq(kind))
                .order(d::id.desc())
                .select(BindingDict::as_select())
                .first(conn)
                .optional()?
            {
                out.push(row);
            }
        }
        Ok(out)
    }

    /// Every load, newest first.
    pub fn all(conn: &mut MysqlConnection) -> QueryResult<Vec<BindingDict>> {
        d::table
            .order(d::id.desc())
            .select(BindingDict::as_select())
            .load(conn)
    }

    /// When the newest dictionary (of any kind) was loaded; `None`: none was.
    pub fn newest_loaded_at(conn: &mut MysqlConnection) -> QueryResult<Option<NaiveDateTime>> {
        d::table
            .select(diesel::dsl::max(d::loaded_at))
            .first::<Option<NaiveDateTime>>(conn)
    }

    /// The phrases of dictionary `id`, in line order.
    pub fn phrases(conn: &mut MysqlConnection, id: u32) -> QueryResult<Vec<BindingDictPhrase>> {
        p::table
            .filter(p::dict_id.eq(id))
            .order(p::line)
            .select(BindingDictPhrase::as_select())
            .load(conn)
    }
}

diesel::define_sql_function!(fn last_insert_id() -> diesel::sql_types::Unsigned<diesel::sql_types::BigInt>);
