//! Composites in a container (docs/spec/hrryfile.md §2): the head under the composite's name,
//! member *i* under `name/role_i`, recursively.

use super::{Composite, CompositeSpec, Item};
use crate::descriptor::TensorDescriptor;
use crate::error::{bail, err, Result};
use crate::file::{FileReader, FileWriter, ReadAt};
use crate::stream::WriteTransport;
use crate::wire::MAX_COMPOSITE_TENSORS;

/// Adds a composite to a container: the head under `spec.name` (required), member *i* under
/// `name/role_i`, recursively. Errors: `InvalidArgument` (no name), those of `flatten` and
/// `add_tensor`. A failure part-way leaves the members already added in the container.
pub fn add_composite<T: WriteTransport>(w: &mut FileWriter<T>, spec: &CompositeSpec<'_>) -> Result<()> {
    let name = match spec.name.as_deref() {
        Some(n) if !n.is_empty() => n,
        _ => bail!(InvalidArgument, "a composite in a container needs a non-empty name"),
    };
    let mut flat = Vec::new();
    spec.flatten_into(0, 0, Some(name), &mut flat)?;
    for (d, p) in &flat {
        w.add_tensor(d, p)?;
    }
    Ok(())
}

/// Reads the composite stored under `name` with all its members (their contents checked).
/// Errors: `NotFound`, `InvalidArgument` (the entry is not a composite head), `Corrupt`
/// (a member missing or out of place), `LimitExceeded`, and those of `read_tensor`.
pub fn read_composite<R: ReadAt>(r: &mut FileReader<R>, name: &str) -> Result<Composite> {
    let e = r.find(name.as_bytes())?.ok_or_else(|| err!(NotFound, "no tensor named {name:?}"))?;
    if !e.descriptor().is_composite_head() || e.descriptor().composite().is_some_and(|c| c.depth() != 0) {
        bail!(InvalidArgument, "{name:?} is not a top-level composite");
    }
    let mut count = 1;
    read_members(r, e.descriptor().clone(), name, &mut count, true)
}

/// Finds every member of `head` (stored under `path`) by name and checks that it is in place
/// (depth and index); with `read`, reads each tensor member (payloads and indices checked) into
/// the returned composite, else its member list stays empty (an index-only check). `count`
/// counts descriptors, heads included.
fn read_members<R: ReadAt>(
    r: &mut FileReader<R>,
    head: TensorDescriptor,
    path: &str,
    count: &mut usize,
    read: bool,
) -> Result<Composite> {
    let info = head.composite().expect("head").clone();
    let mut members = Vec::with_capacity(if read { info.roles().len() } else { 0 });
    for (i, role) in info.roles().iter().enumerate() {
        *count += 1;
        if *count > MAX_COMPOSITE_TENSORS {
            bail!(LimitExceeded, "composite {path:?} holds more than {MAX_COMPOSITE_TENSORS} descriptors");
        }
        let child = format!("{path}/{role}");
        let e = r
            .find(child.as_bytes())?
            .ok_or_else(|| err!(Corrupt, "member {child:?} of composite {path:?} is missing"))?;
        let ok = e.descriptor().composite().is_some_and(|c| c.depth() == info.depth() + 1 && c.index() as usize == i);
        if !ok {
            bail!(Corrupt, "entry {child:?} is not member {i} of composite {path:?}");
        }
        if e.descriptor().is_composite_head() {
            let nested = read_members(r, e.descriptor().clone(), &child, count, read)?;
            if read {
                members.push(Item::Composite(nested));
            }
        } else if read {
            members.push(Item::Tensor(r.read_tensor(&e)?));
        }
    }
    Ok(Composite { head, members })
}

/// Checks the composite structure of a whole container from its index, reading no payload
/// (docs/spec/hrryfile.md §2): every top-level head's members are stored under `name/role_i`
/// at the head's depth + 1 and index *i*, recursively; no top-level composite holds more than
/// [`MAX_COMPOSITE_TENSORS`] descriptors; and every entry that says it is a member (depth ≥ 1)
/// is reached that way from some top-level head. Costs one entry read per entry and one
/// lookup per member. Errors: `Corrupt` (a member missing, out of place, or belonging to no
/// composite), `LimitExceeded`, and the failures of reading the index.
pub fn check_container<R: ReadAt>(r: &mut FileReader<R>) -> Result<()> {
    let mut members = 0u64;
    let mut reached = 0u64;
    for i in 0..r.entry_count() {
        let e = r.entry(i)?;
        let Some(c) = e.descriptor().composite() else { continue };
        if c.depth() > 0 {
            members += 1;
            continue;
        }
        let mut count = 1;
        read_members(r, e.descriptor().clone(), e.name(), &mut count, false)?;
        reached += count as u64 - 1;
    }
    if members == reached {
        return Ok(());
    }
    // Some member belongs to no composite: a second pass names the first one.
    for i in 0..r.entry_count() {
        let e = r.entry(i)?;
        let Some(c) = e.descriptor().composite().filter(|c| c.depth() > 0) else { continue };
        let parent = e.name().rsplit_once('/');
        let listed = match parent {
            Some((p, role)) => match r.find(p.as_bytes())? {
                Some(h) => h.descriptor().composite().is_some_and(|hc| {
                    hc.depth() + 1 == c.depth() && hc.roles().get(c.index() as usize).is_some_and(|r| r == role)
                }),
                None => false,
            },
            None => false,
        };
        if !listed {
            bail!(
                Corrupt,
                "entry {:?} is marked as member {} at depth {} of a composite, but no composite head lists it",
                e.name(),
                c.index(),
                c.depth()
            );
        }
    }
    // Every member is listed by its parent, so some parent chain does not reach depth 0.
    bail!(Corrupt, "{} composite members are not reached from any top-level composite", members - reached)
}
