//! One module per table. `Foo` is a row as read, `NewFoo` a row to insert, and, for the tables
//! a daemon updates column by column, `FooChanges` the columns an update may set (`None` leaves
//! a column alone; `Some(None)` sets a nullable one to NULL). Columns that hold a code are
//! typed by [`codes`]. Every function takes `&mut MysqlConnection` so callers can group several
//! in one transaction.

mod binding;
mod codes;
mod customer_resource;
mod host;
mod loader_watermark;
mod multidoc;
mod open_xml_format;
mod partner_domain;
mod path_arg_name;
mod process_timestamp;
mod query_arg;
mod query_arg_probe;
mod queue_applied;
mod resource_status;
mod sql;
mod url;
mod vr_data;
mod vr_open_datasource;
mod vr_resource;
mod vr_update_info;
mod withdraw_position;
mod yacobot_node;

pub use binding::{
    BindingDict, BindingDictPhrase, BindingPage, BindingPosition, NewBindingDict, NewBindingPage,
    PathStub,
};
pub use codes::{
    DataFrom, DataStatus, DelaySource, EmitStatus, FeedUrlStatus, FetchState, FetchStatus,
    GroupType, IndexType, PageOutcome, ResStatus, UpdateType, ValidStatus, WithdrawReason,
};
pub use customer_resource::CustomerResource;
pub use host::{Host, HostRow, KeptRobots, RobotsAnswer};
pub use loader_watermark::LoaderWatermark;
pub use multidoc::{
    FingerprintCount, MultidocDomain, MultidocFingerprint, MultidocGroup, MultidocPage,
    MultidocPosition, NearGroup, NewMultidocDomain, NewMultidocGroup, NewMultidocPage,
};
pub use open_xml_format::{NewOpenXmlFormat, OpenXmlFormat};
pub use partner_domain::{NewPartnerDomain, PartnerDomain};
pub use path_arg_name::{ArgRule, NewPathArgName, PathArgName};
pub use process_timestamp::{NewProcessTimestamp, ProcessTimestamp, ProcessTimestampChanges};
pub use query_arg::{NewQueryArg, QueryArg, INSIGNIFICANT_SCORE};
pub use query_arg_probe::{NewQueryArgProbe, QueryArgProbe};
pub use queue_applied::{NewQueueApplied, QueueApplied};
pub use resource_status::{NewResourceStatus, ResourceStatus, ResourceStatusChanges, SyncCounts};
pub use url::{
    ArchivedCopy, Claimed, LoadRow, Merge, Merged, MovedCopy, NewUrl, PathPage, Url, UrlChanges,
    Withdrawal, NEW_URL_BOOST,
};
pub use vr_data::{ItemWrite, KnownItem, LiveItem, NewVrData, RunWrite, SnapshotItem, VrData};
pub use vr_open_datasource::{NewVrOpenDatasource, VrOpenDatasource, VrOpenDatasourceChanges};
pub use vr_resource::{ClaimedRun, NewVrResource, VrResource, VrResourceChanges};
pub use vr_update_info::{NewVrUpdateInfo, VrUpdateInfo};
pub use withdraw_position::WithdrawPosition;
pub use yacobot_node::{NewYacobotNode, YacobotNode};
