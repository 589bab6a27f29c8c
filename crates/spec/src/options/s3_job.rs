//! The S3 part of a job's options: what `kind = "s3"` needs, and S3 options on another kind
//! refused.

use crate::choices::LoadKind;
use crate::s3::{valid_bucket, ObjSize, OpMix, S3Job, S3Op};
use crate::SpecError;

use super::{refuse_given, JobOpts};

impl JobOpts {
    /// The S3 part of a job of kind s3; S3 options on another kind are a mistake.
    pub(super) fn s3(&self, kind: LoadKind) -> Result<Option<S3Job>, SpecError> {
        if kind != LoadKind::S3 {
            let given = [
                ("--endpoint", self.endpoint.is_some()),
                ("--bucket", self.bucket.is_some()),
                ("--buckets", self.buckets.is_some()),
                ("--addressing", self.addressing.is_some()),
                ("--op-mix", self.op_mix.is_some()),
                ("--obj-size", self.obj_size.is_some()),
                ("--objects", self.objects.is_some()),
                ("prepare_sizes", self.prepare_sizes.is_some()),
                ("--ops", self.ops.is_some()),
                ("--size-dist", self.size_dist.is_some()),
                ("--get-range", self.get_range.is_some()),
                ("--multipart-threshold", self.multipart_threshold.is_some()),
                ("--part-size", self.part_size.is_some()),
            ];
            refuse_given(
                &given,
                "an option of S3 jobs only: use `stormark s3`, or kind = \"s3\" in a job file",
            )?;
            return Ok(None);
        }
        let endpoint = self.endpoint.clone().ok_or_else(|| {
            SpecError::invalid(
                "--endpoint",
                "(missing)",
                "the service's address, such as --endpoint http://127.0.0.1:9000",
            )
        })?;
        let bucket = self.bucket.clone().ok_or_else(|| {
            SpecError::invalid(
                "--bucket",
                "(missing)",
                "a bucket name, such as --bucket bench",
            )
        })?;
        let buckets = self.buckets.unwrap_or(1);
        if buckets > 1 && !valid_bucket(&format!("{bucket}-{}", buckets - 1)) {
            return Err(SpecError::invalid(
                "--buckets",
                &buckets.to_string(),
                format!("names {bucket}-0 to {bucket}-{}, which must be bucket names too (at most 63 characters): a shorter --bucket", buckets - 1),
            ));
        }
        Ok(Some(S3Job {
            endpoint,
            bucket,
            buckets,
            region: self.region.clone().unwrap_or_else(|| "us-east-1".into()),
            addressing: self.addressing.unwrap_or_default(),
            prefix: self.prefix.clone().unwrap_or_else(|| "stormark".into()),
            mix: self
                .op_mix
                .clone()
                .unwrap_or_else(|| OpMix(vec![(S3Op::Get, 1)])),
            obj_size: {
                let (min, max) = self.obj_size.unwrap_or((1 << 20, 1 << 20));
                ObjSize {
                    min,
                    max,
                    dist: self.size_dist.unwrap_or_default(),
                }
            },
            range: self.get_range,
            verify: self.verify.unwrap_or(false),
            // Parts of 8 MiB unless given (the AWS CLI's default).
            multipart: self
                .multipart_threshold
                .map(|t| (t, self.part_size.unwrap_or(8 << 20))),
            objects: self.objects.unwrap_or(1000),
            prepare_sizes: self.prepare_sizes.clone().unwrap_or_default(),
            ops: self.ops,
        }))
    }
}
