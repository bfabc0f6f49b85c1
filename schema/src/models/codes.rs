//! The integer columns that hold a code, each a type of its own, mapped to its column here and
//! nowhere else (`ToSql`/`FromSql` for `TINYINT UNSIGNED`). The values are those the
//! migrations' column comments give.
//!
//! Two kinds:
//! * An enum where the code decides by the value (`FetchState`, `FetchStatus`, …). Any other
//!   value reads as `Unknown(n)` and is written back as `n`: a row an operator edited by hand,
//!   or one a newer version wrote, reads as it did when the columns were plain integers,
//!   instead of failing every query that loads it. `Unknown(n)` equals no named value.
//! * A newtype with named constants where the value is the operator's and the code only
//!   carries it (`IndexType`, `GroupType`, `DataFrom`): every value is legitimate, and only
//!   some have names.

use std::hash::{Hash, Hasher};
use std::io::Write;

use diesel::deserialize::{self, FromSql, FromSqlRow};
use diesel::expression::AsExpression;
use diesel::mysql::{Mysql, MysqlValue};
use diesel::serialize::{self, IsNull, Output, ToSql};
use diesel::sql_types::{TinyInt, Unsigned};

/// `ToSql`/`FromSql` of a code type for `TINYINT UNSIGNED`, by `code` and `from_code`.
macro_rules! tinyint_column {
    ($name:ident) => {
        impl ToSql<Unsigned<TinyInt>, Mysql> for $name {
            fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, Mysql>) -> serialize::Result {
                out.write_all(&[self.code()])?;
                Ok(IsNull::No)
            }
        }

        impl FromSql<Unsigned<TinyInt>, Mysql> for $name {
            fn from_sql(value: MysqlValue<'_>) -> deserialize::Result<Self> {
                <u8 as FromSql<Unsigned<TinyInt>, Mysql>>::from_sql(value).map(Self::from_code)
            }
        }
    };
}

/// An enum of named values plus `Unknown(u8)`, compared by value.
macro_rules! code_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $code:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, AsExpression, FromSqlRow)]
        #[diesel(sql_type = Unsigned<TinyInt>)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )+
            /// A value this version does not name; kept as it is.
            Unknown(u8),
        }

        impl $name {
            /// The value in the column.
            pub const fn code(self) -> u8 {
                match self {
                    $( Self::$variant => $code, )+
                    Self::Unknown(n) => n,
                }
            }

            /// The named value of `code`, else `Unknown(code)`.
            pub const fn from_code(code: u8) -> Self {
                match code {
                    $( $code => Self::$variant, )+
                    n => Self::Unknown(n),
                }
            }
        }

        // By value, so that `Unknown(n)` of a named value's `n` is that value.
        impl PartialEq for $name {
            fn eq(&self, other: &Self) -> bool {
                self.code() == other.code()
            }
        }

        impl Eq for $name {}

        impl Hash for $name {
            fn hash<H: Hasher>(&self, state: &mut H) {
                self.code().hash(state);
            }
        }

        tinyint_column!($name);
    };
}

/// A value of an open set, with names for some of its values.
macro_rules! code_newtype {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$cmeta:meta])* const $constant:ident = $code:literal; )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, AsExpression, FromSqlRow)]
        #[diesel(sql_type = Unsigned<TinyInt>)]
        pub struct $name(pub u8);

        impl $name {
            $( $(#[$cmeta])* pub const $constant: Self = Self($code); )+

            /// The value in the column.
            pub const fn code(self) -> u8 {
                self.0
            }

            pub const fn from_code(code: u8) -> Self {
                Self(code)
            }
        }

        tinyint_column!($name);
    };
}

code_enum! {
    /// Where a URL stands in the fetch cycle (`url.fetch_state`).
    pub enum FetchState {
        Idle = 0,
        Claimed = 1,
        Fetched = 2,
        Failed = 3,
        /// 404 or 410: the page is gone and was announced with a DELETE item.
        Gone = 4,
        /// Claimed, then found excluded by the exclusion file (`Url.ExcludeFile`): not
        /// fetched, parked until it is due again.
        Excluded = 5,
    }
}

code_enum! {
    /// Where a host's politeness delay comes from (`host.delay_source`).
    pub enum DelaySource {
        /// `Fetch.HostDelay`.
        HostDelay = 1,
        /// Its robots.txt `Crawl-delay`, longer than `Fetch.HostDelay`.
        CrawlDelay = 2,
    }
}

code_enum! {
    /// Why a URL is to be withdrawn downstream and removed (`url.withdraw`; docs/design.md
    /// "Withdrawal").
    pub enum WithdrawReason {
        /// Merged into its canonical URL (an argument it carries became insignificant).
        Merged = 1,
        /// Not hit for `Url.ExpireDays`.
        Expired = 2,
    }
}

code_enum! {
    /// The result of a resource's runs: `vr_resource.fetch_status` (its last run),
    /// `process_timestamp.status` (one run) and `vr_update_info.status` (the run that changed
    /// the item count), as in the source.
    pub enum FetchStatus {
        Never = 0,
        Ok = 1,
        Running = 2,
        Error = 4,
    }
}

code_enum! {
    /// Whether a resource runs at all (`vr_resource.res_status`), and its withdrawal (the
    /// source's DeleteTask; docs/formats.md "Withdrawing a resource").
    pub enum ResStatus {
        /// Not run. Withdrawn: its items were deleted downstream (a resource disabled before
        /// withdrawals existed may still have live items; `resource disable` withdraws them).
        Disabled = 0,
        Enabled = 1,
        /// Withdrawal asked for: the resources worker emits a DELETE item for each live item,
        /// marks the rows deleted, then sets `Disabled`.
        Withdrawing = 2,
        /// Removal asked for: withdrawn as above, then every row of the resource deleted.
        Removing = 3,
    }
}

code_enum! {
    /// Whether a feed URL is still listed by a sitemap of its resource
    /// (`resource_status.res_status`).
    pub enum FeedUrlStatus {
        /// No longer listed: not fetched.
        Retired = 0,
        Listed = 1,
    }
}

code_enum! {
    /// Whether a feed item is in the feed (`vr_data.data_status`).
    pub enum DataStatus {
        /// Gone from the feed, announced with a DELETE item.
        Deleted = 0,
        Live = 1,
    }
}

code_enum! {
    /// Whether an item's last change is in the segments (`vr_data.status`; docs/formats.md
    /// "Resources write protocol").
    pub enum EmitStatus {
        Pending = 0,
        Emitted = 1,
    }
}

code_enum! {
    /// An item's last change (`vr_data.update_type`).
    pub enum UpdateType {
        /// New, or back in the feed after it was deleted.
        Insert = 1,
        Update = 2,
        Delete = 3,
    }
}

code_enum! {
    /// Whether an item passed validation (`vr_data.valid_status`).
    pub enum ValidStatus {
        Invalid = 0,
        Valid = 1,
    }
}

code_enum! {
    /// What the page analysis made of an archived page (`multidoc_page.outcome`).
    pub enum PageOutcome {
        /// Decoded, cut into blocks, weighed (and classified, with a model).
        Analysed = 1,
        /// An empty body.
        Empty = 2,
        /// Binary data (an image, a PDF, an archive …), not text.
        Binary = 3,
        /// Larger than `MultiDoc.MaxBytes`.
        TooLarge = 4,
    }
}

code_newtype! {
    /// How a field of a resource class is indexed (`open_xml_format.index_type`); the item's
    /// canonical form carries the number.
    pub struct IndexType {
        const KEYWORD = 0;
        const FULL_TEXT = 1;
    }
}

code_newtype! {
    /// The grouping of a field's repeated values (`open_xml_format.group_type`): 0 none, 1-3
    /// the consumers' groupings; the item's canonical form carries the number.
    pub struct GroupType {
        const NONE = 0;
    }
}

code_newtype! {
    /// Where a resource's data comes from (`vr_resource.data_from`); other values are
    /// reserved.
    pub struct DataFrom {
        /// A partner feed over HTTP.
        const PARTNER_FEED = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_unknown_values_are_kept() {
        for n in 0..=u8::MAX {
            assert_eq!(FetchState::from_code(n).code(), n);
            assert_eq!(FetchStatus::from_code(n).code(), n);
            assert_eq!(UpdateType::from_code(n).code(), n);
            assert_eq!(PageOutcome::from_code(n).code(), n);
            assert_eq!(DelaySource::from_code(n).code(), n);
            assert_eq!(IndexType::from_code(n).code(), n);
        }
        assert_eq!(FetchState::from_code(4), FetchState::Gone);
        assert_eq!(FetchStatus::from_code(3), FetchStatus::Unknown(3));
        assert_eq!(FetchStatus::Unknown(4), FetchStatus::Error);
        assert_ne!(FetchStatus::from_code(3), FetchStatus::Running);
        assert_eq!(UpdateType::from_code(0), UpdateType::Unknown(0));
        assert_eq!(IndexType::from_code(1), IndexType::FULL_TEXT);
    }
}
