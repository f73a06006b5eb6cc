/// `taskid`'s version: what `taskid --version` prints, the ready line's `version` and INFO's
/// `taskid_version`. The one place it is written. Any thread may read it.
package let taskidVersion = "0.12.0"
