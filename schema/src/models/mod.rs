//! One module per table. `Foo` is a row as read, `NewFoo` a row to insert, `FooChanges` the
//! columns an update may set (`None` leaves a column alone; `Some(None)` sets a nullable one
//! to NULL). Every function takes `&mut MysqlConnection` so callers can group several in one
//! transaction.

mod open_xml_format;
mod partner_domain;
mod path_arg_name;
mod process_timestamp;
mod query_arg;
mod queue_applied;
mod resource_status;
mod sql;
mod url;
mod vr_data;
mod vr_open_datasource;
mod vr_resource;
mod vr_update_info;
mod yacobot_node;

pub use open_xml_format::{NewOpenXmlFormat, OpenXmlFormat, OpenXmlFormatChanges};
pub use partner_domain::{NewPartnerDomain, PartnerDomain, PartnerDomainChanges};
pub use path_arg_name::{ArgRule, NewPathArgName, PathArgName, PathArgNameChanges};
pub use process_timestamp::{NewProcessTimestamp, ProcessTimestamp, ProcessTimestampChanges};
pub use query_arg::{NewQueryArg, QueryArg, QueryArgChanges, INSIGNIFICANT_SCORE};
pub use queue_applied::{NewQueueApplied, QueueApplied, QueueAppliedChanges};
pub use resource_status::{NewResourceStatus, ResourceStatus, ResourceStatusChanges, SyncCounts};
pub use url::{Claimed, FetchState, LoadRow, NewUrl, Url, UrlChanges, NEW_URL_BOOST};
pub use vr_data::{ItemWrite, KnownItem, NewVrData, RunWrite, VrData, VrDataChanges};
pub use vr_open_datasource::{NewVrOpenDatasource, VrOpenDatasource, VrOpenDatasourceChanges};
pub use vr_resource::{ClaimedRun, FetchStatus, NewVrResource, VrResource, VrResourceChanges};
pub use vr_update_info::{NewVrUpdateInfo, VrUpdateInfo, VrUpdateInfoChanges};
pub use yacobot_node::{NewYacobotNode, YacobotNode, YacobotNodeChanges};
