//! The stream encoder's last descriptor: `hurray_encoder_encode_batch` makes each item's
//! descriptor from its spec, and a stream of small tensors mostly repeats one shape under new
//! names and metadata. When an item's spec agrees with the previous one in every field but
//! the name and the metadata, the previous descriptor takes the new strings in place
//! (`TensorDescriptor::renew_strings`, the builder's checks) and is encoded into a reused
//! buffer, so such an item costs no heap allocation. The result is the descriptor and encoding
//! `descriptor_of_spec` makes, error for error: a spec that differs anywhere else, or is
//! malformed, takes that path.

use hurray_core::TensorDescriptor;

use crate::buffer::HurrayBufferSpec;
use crate::descriptor::HurrayQuantization;
use crate::descriptor_spec::{
    check_metadata_count, check_name_len, checked_entry, descriptor_of_spec, spec_metadata, spec_name,
    HurrayDescriptorSpec,
};
use crate::panic::FfiResult;

/// The fields of a spec besides its name and metadata, as the last descriptor was made from.
struct Structure {
    element_type: u8,
    layout: u8,
    dims: Vec<u64>,
    strides: Vec<i64>,
    byte_offset: u64,
    buffers: Vec<HurrayBufferSpec>,
    quantization: HurrayQuantization,
}

impl Structure {
    /// The structure of a spec `descriptor_of_spec` accepted.
    ///
    /// # Safety
    /// As for [`descriptor_of_spec`], which accepted `s`.
    unsafe fn of(s: &HurrayDescriptorSpec) -> FfiResult<Self> {
        // SAFETY: the counts were bounded by descriptor_of_spec, the pointers are valid (# Safety).
        let (dims, strides, buffers) = unsafe {
            (
                crate::slices::slice_arg(s.dims, s.rank, "spec.dims")?,
                crate::slices::slice_arg(s.strides, s.stride_count, "spec.strides")?,
                crate::slices::slice_arg(s.buffers, s.buffer_count, "spec.buffers")?,
            )
        };
        Ok(Structure {
            element_type: s.element_type,
            layout: s.layout,
            dims: dims.to_vec(),
            strides: strides.to_vec(),
            byte_offset: s.byte_offset,
            buffers: buffers.to_vec(),
            quantization: s.quantization,
        })
    }

    /// Whether `s` has this structure, bit for bit (reserved fields 0). False for a spec whose
    /// counts exceed the format's limits or whose arrays are NULL with a count: the full path
    /// then reports them.
    ///
    /// # Safety
    /// Every pointer in `s` valid for its count.
    unsafe fn matches(&self, s: &HurrayDescriptorSpec) -> bool {
        let q = &s.quantization;
        let p = &self.quantization;
        if s.reserved != 0
            || s.reserved2 != 0
            || s.element_type != self.element_type
            || s.layout != self.layout
            || s.rank != self.dims.len()
            || s.stride_count != self.strides.len()
            || s.byte_offset != self.byte_offset
            || s.buffer_count != self.buffers.len()
            || q.kind != p.kind
            || q.dequantized_type != p.dequantized_type
            || q.reserved != p.reserved
            || q.axis != p.axis
            || q.scale.to_bits() != p.scale.to_bits()
            || q.bias.to_bits() != p.bias.to_bits()
        {
            return false;
        }
        // SAFETY: the counts equal those of an accepted spec (so within the limits) and the
        // pointers are valid for them (# Safety); slice_arg refuses NULL with a count.
        // Element by element: the arrays are short, and a library `memcmp` per array costs
        // more than the comparison.
        unsafe {
            matches!(crate::slices::slice_arg(s.dims, s.rank, "spec.dims"), Ok(d) if same(d, &self.dims))
                && matches!(crate::slices::slice_arg(s.strides, s.stride_count, "spec.strides"),
                    Ok(x) if same(x, &self.strides))
                && matches!(crate::slices::slice_arg(s.buffers, s.buffer_count, "spec.buffers"),
                    Ok(b) if same(b, &self.buffers))
        }
    }
}

/// Whether two slices of the same length hold equal elements.
fn same<T: PartialEq>(a: &[T], b: &[T]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// An encoder's last descriptor and its encoding; see the module documentation.
#[derive(Default)]
pub(crate) struct SpecCache {
    last: Option<(Structure, TensorDescriptor)>,
    encoded: Vec<u8>,
    /// Specs served from the last descriptor (for tests).
    #[cfg(test)]
    hits: usize,
}

impl SpecCache {
    /// The descriptor `descriptor_of_spec(s)` makes and its encoding, with the errors of
    /// `descriptor_of_spec` and `TensorDescriptor::encode`.
    ///
    /// # Safety
    /// As for [`descriptor_of_spec`].
    pub(crate) unsafe fn descriptor(&mut self, s: &HurrayDescriptorSpec) -> FfiResult<(&TensorDescriptor, &[u8])> {
        // SAFETY: the pointers in `s` are valid for their counts (# Safety).
        let hit = matches!(&self.last, Some((structure, _)) if unsafe { structure.matches(s) });
        if hit {
            #[cfg(test)]
            {
                self.hits += 1;
            }
            check_name_len(s)?;
            check_metadata_count(s)?;
            // SAFETY: as above, with the counts just bounded.
            let (name, views) = unsafe { (spec_name(s)?, spec_metadata(s)?) };
            let Some((_, d)) = self.last.as_mut() else { unreachable!("checked above") };
            // SAFETY: every view was checked by spec_metadata.
            d.renew_strings(name, views.iter().map(|m| unsafe { checked_entry(m) }))?;
            if let Err(e) = d.encode_into(&mut self.encoded) {
                // The descriptor took strings whose encoding is too long: forget it.
                self.last = None;
                return Err(e.into());
            }
        } else {
            // SAFETY: as above.
            let d = unsafe { descriptor_of_spec(s)? };
            d.encode_into(&mut self.encoded)?;
            // SAFETY: descriptor_of_spec accepted `s`.
            let structure = unsafe { Structure::of(s)? };
            self.last = Some((structure, d));
        }
        let Some((_, d)) = self.last.as_ref() else { unreachable!("set above") };
        Ok((d, &self.encoded))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decoder::HurrayMetadataView;
    use crate::descriptor::{HURRAY_QUANT_NONE, HURRAY_QUANT_PER_TENSOR_AFFINE};
    use crate::status::*;

    /// A spec's owned parts, so tests can vary each field.
    #[derive(Clone)]
    struct Owned {
        element_type: u8,
        dims: Vec<u64>,
        name: Option<Vec<u8>>,
        metadata: Vec<(Vec<u8>, Vec<u8>)>,
        quantization: HurrayQuantization,
        buffers: Vec<HurrayBufferSpec>,
    }

    impl Owned {
        fn new(name: &str) -> Self {
            Owned {
                element_type: 11, // float32
                dims: vec![768],
                name: Some(name.as_bytes().to_vec()),
                metadata: vec![(b"doc".to_vec(), b"bench".to_vec())],
                quantization: HurrayQuantization::default(),
                buffers: Vec::new(),
            }
        }

        /// Runs `f` with the spec these parts describe.
        fn with<R>(&self, f: impl FnOnce(&HurrayDescriptorSpec) -> R) -> R {
            let views: Vec<HurrayMetadataView> = self
                .metadata
                .iter()
                .map(|(k, v)| HurrayMetadataView {
                    key: k.as_ptr(),
                    key_len: k.len(),
                    value: v.as_ptr(),
                    value_len: v.len(),
                })
                .collect();
            let spec = HurrayDescriptorSpec {
                element_type: self.element_type,
                layout: 0,
                reserved: 0,
                reserved2: 0,
                rank: self.dims.len(),
                dims: self.dims.as_ptr(),
                strides: std::ptr::null(),
                stride_count: 0,
                byte_offset: 0,
                buffer_count: self.buffers.len(),
                buffers: if self.buffers.is_empty() { std::ptr::null() } else { self.buffers.as_ptr() },
                name: self.name.as_ref().map_or(std::ptr::null(), |n| n.as_ptr()),
                name_len: self.name.as_ref().map_or(0, |n| n.len()),
                metadata_count: views.len(),
                metadata: if views.is_empty() { std::ptr::null() } else { views.as_ptr() },
                quantization: self.quantization,
            };
            f(&spec)
        }
    }

    /// What the full path makes of `o`: the encoding, or the status and message.
    fn reference(o: &Owned) -> Result<Vec<u8>, (i32, String)> {
        o.with(|s| {
            // SAFETY: `with` passes a spec whose pointers point into `o`, valid for their counts.
            unsafe { descriptor_of_spec(s) }.and_then(|d| Ok(d.encode()?))
        })
        .map_err(|e| (e.status, e.message))
    }

    fn cached(c: &mut SpecCache, o: &Owned) -> Result<Vec<u8>, (i32, String)> {
        o.with(|s| {
            // SAFETY: as in `reference`.
            unsafe { c.descriptor(s) }.map(|(d, enc)| {
                assert_eq!(d.encode().unwrap(), enc, "the returned encoding is the descriptor's");
                enc.to_vec()
            })
        })
        .map_err(|e| (e.status, e.message))
    }

    #[test]
    fn a_run_of_renamed_specs_encodes_as_the_full_path_does() {
        let mut c = SpecCache::default();
        let mut specs = Vec::new();
        for i in 0..50 {
            let mut o = Owned::new(&format!("emb-{i}"));
            match i % 10 {
                1 => o.name = None,
                2 => o.metadata.clear(),
                3 => o.metadata.push((b"extra".to_vec(), vec![i as u8; i])),
                4 => o.dims = vec![2, 384],
                5 => {
                    o.quantization = HurrayQuantization {
                        kind: HURRAY_QUANT_PER_TENSOR_AFFINE,
                        dequantized_type: 11,
                        scale: 0.5,
                        ..Default::default()
                    }
                }
                6 => o.name = Some(format!("{}-longer-name-than-before-{i}", "x".repeat(i)).into_bytes()),
                _ => {}
            }
            if o.quantization.kind != HURRAY_QUANT_NONE {
                o.element_type = 1; // int8
            }
            specs.push(o.clone());
            specs.push(o); // the same spec twice: the second is a hit
        }
        for o in &specs {
            assert_eq!(cached(&mut c, o), reference(o));
        }
        // Every repeated spec, and each renamed one after a spec of its structure, was a hit.
        assert!(c.hits >= 60, "{} hits", c.hits);
    }

    #[test]
    fn refusals_match_the_full_path_and_leave_the_cache_sound() {
        let mut c = SpecCache::default();
        let good = Owned::new("a");
        assert!(cached(&mut c, &good).is_ok());
        let mut bad = Vec::new();
        let mut o = good.clone();
        o.name = Some(b"bad\0name".to_vec());
        bad.push(o);
        let mut o = good.clone();
        o.name = Some(vec![0xff, 0xfe]);
        bad.push(o);
        let mut o = good.clone();
        o.metadata.push((b"doc".to_vec(), b"twice".to_vec()));
        bad.push(o);
        let mut o = good.clone();
        o.metadata = vec![(Vec::new(), b"v".to_vec())];
        bad.push(o);
        let mut o = good.clone();
        o.metadata = vec![(vec![0xc3], b"v".to_vec())];
        bad.push(o);
        let mut o = good.clone();
        o.metadata = vec![(b"k".to_vec(), vec![0; hurray_core::MAX_METADATA_VALUE_BYTES + 1])];
        bad.push(o);
        let mut o = good.clone();
        o.metadata =
            (0..=hurray_core::MAX_METADATA_ENTRIES).map(|i| (format!("k{i}").into_bytes(), Vec::new())).collect();
        bad.push(o);
        let mut o = good.clone();
        o.name = Some(vec![b'n'; hurray_core::MAX_NAME_BYTES + 1]);
        bad.push(o);
        // Strings each within their limits whose encoding exceeds the descriptor's limit.
        let mut o = good.clone();
        o.metadata = (0..hurray_core::MAX_METADATA_ENTRIES)
            .map(|i| (format!("k{i}").into_bytes(), vec![7; hurray_core::MAX_METADATA_VALUE_BYTES]))
            .collect();
        bad.push(o);
        for o in &bad {
            let r = reference(o);
            assert!(r.is_err(), "the full path refuses this spec");
            assert_eq!(cached(&mut c, o), r);
            // After a refusal the next good spec still comes out right.
            assert_eq!(cached(&mut c, &good), reference(&good));
        }
        assert_eq!(reference(&bad[0]).unwrap_err().0, HURRAY_ERR_INVALID_ARGUMENT);
    }

    #[test]
    fn a_negative_zero_scale_is_not_taken_for_zero() {
        let mut c = SpecCache::default();
        let mut o = Owned::new("q");
        o.element_type = 1;
        o.quantization = HurrayQuantization {
            kind: HURRAY_QUANT_PER_TENSOR_AFFINE,
            dequantized_type: 11,
            scale: 1.0,
            bias: 0.0,
            ..Default::default()
        };
        assert_eq!(cached(&mut c, &o), reference(&o));
        o.quantization.bias = -0.0;
        assert_eq!(cached(&mut c, &o), reference(&o));
    }
}
