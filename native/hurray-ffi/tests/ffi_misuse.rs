//! API misuse through the C ABI (docs/spec/c-abi.md §Conventions, §Handles and ownership): NULL for
//! every required pointer of every function (the list of functions is read from hurray.h, so a new
//! function without a case fails here), destroy(NULL) no-ops, use after destroy in debug builds,
//! borrowed handles refusing destroy, release callbacks called exactly once, the sync-mode
//! cross-check of buffer handoff, the last-error accessor, status names, and the C constants
//! against hurray-core.

#[path = "../../hurray-core/tests/common/mod.rs"]
mod common;
mod ffi_common;

use std::collections::BTreeSet;
use std::ffi::{c_char, c_void};
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;
use ffi_common::*;
use hurray_core::{DeviceTag, ElementType, LayoutDescriptor, SyncMode};
use hurray_ffi::buffer::*;
use hurray_ffi::buffer_list::*;
use hurray_ffi::composite::*;
use hurray_ffi::context::*;
use hurray_ffi::descriptor::*;
use hurray_ffi::dlpack::*;
use hurray_ffi::panic::hurray_last_error_message;
use hurray_ffi::reader::*;
use hurray_ffi::sparse::*;
use hurray_ffi::status::hurray_status_name;
use hurray_ffi::tensor::*;
use hurray_ffi::writer::*;
use hurray_ffi::*;

/// Live handles of every type, for the NULL-pointer table.
struct Fixture {
    mem: Box<Mem>,
    reader: *mut HurrayReader,
    writer: *mut HurrayWriter,
    tensor: *mut HurrayTensor,
    tdesc: *mut HurrayDescriptor,
    tlist: *mut HurrayBufferList,
    tbuf: *mut HurrayBuffer,
    desc: *mut HurrayDescriptor,
    builder: *mut HurrayDescriptorBuilder,
    list: *mut HurrayBufferList,
    buffer: *mut HurrayBuffer,
    ctx: *mut HurrayTensorContext,
    backing: Box<Aligned64>,
}

#[repr(C, align(64))]
struct Aligned64([u64; 8]);

impl Fixture {
    fn new() -> Fixture {
        let item = {
            let mut it = dense(ElementType::Float32, &[2]);
            it.desc = it.desc.with_name("x").unwrap().with_metadata("k", "v").unwrap();
            it
        };
        let mut mem = Mem::reading(encode_stream(&[item.clone(), item.clone()], false), 0);
        let t = transport(&mut mem);
        let mut f = Fixture {
            reader: null_mut(),
            writer: null_mut(),
            tensor: null_mut(),
            tdesc: null_mut(),
            tlist: null_mut(),
            tbuf: null_mut(),
            desc: decode(&item.desc.encode().unwrap()),
            builder: null_mut(),
            list: null_mut(),
            buffer: null_mut(),
            ctx: null_mut(),
            backing: Box::new(Aligned64([0; 8])),
            mem,
        };
        // SAFETY: `t` is a live local over `mem`, which the fixture keeps; every out-pointer is a field of `f`, and
        // each handle passed on is the one made just before.
        unsafe {
            expect(hurray_reader_new(&t, null(), &mut f.reader), HURRAY_OK);
            expect(hurray_writer_new(&t, null(), &mut f.writer), HURRAY_OK);
            expect(hurray_reader_next_tensor(f.reader, &mut f.tensor), HURRAY_OK);
            expect(hurray_tensor_descriptor(f.tensor, &mut f.tdesc), HURRAY_OK);
            expect(hurray_tensor_buffers(f.tensor, &mut f.tlist), HURRAY_OK);
            expect(hurray_buffer_list_get(f.tlist, 0, &mut f.tbuf), HURRAY_OK);
            let dims = [2u64, 3];
            expect(hurray_descriptor_builder_new(HURRAY_DTYPE_FLOAT32, dims.as_ptr(), 2, &mut f.builder), HURRAY_OK);
            expect(hurray_buffer_list_create(&mut f.list), HURRAY_OK);
            expect(
                hurray_buffer_from_ptr(
                    f.backing.0.as_mut_ptr() as *mut c_void,
                    64,
                    64,
                    0,
                    None,
                    null_mut(),
                    &mut f.buffer,
                ),
                HURRAY_OK,
            );
            let enc = item.desc.encode().unwrap();
            expect(
                hurray_tensor_context_new(4, enc.as_ptr(), enc.len() as u64, null_mut(), None, &mut f.ctx),
                HURRAY_OK,
            );
        }
        f
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        // SAFETY: every field holds NULL or a handle this fixture made and has not destroyed; each destroy nulls its
        // variable.
        unsafe {
            expect(hurray_tensor_destroy(&mut self.tensor), HURRAY_OK);
            expect(hurray_reader_destroy(&mut self.reader), HURRAY_OK);
            expect(hurray_writer_destroy(&mut self.writer), HURRAY_OK);
            expect(hurray_descriptor_destroy(self.desc), HURRAY_OK);
            expect(hurray_descriptor_builder_destroy(&mut self.builder), HURRAY_OK);
            expect(hurray_buffer_list_destroy(&mut self.list), HURRAY_OK);
            expect(hurray_buffer_destroy(&mut self.buffer), HURRAY_OK);
            expect(hurray_tensor_context_destroy(&mut self.ctx), HURRAY_OK);
        }
        assert_eq!(self.mem.released, 2, "reader and writer each release once");
    }
}

struct Slots {
    handle: [u8; 16],
    one: [u64; 1],
    p: *mut c_void,
    u8o: u8,
    u32o: u32,
    u64o: u64,
    us: usize,
    cp: *const c_char,
    bp: *const u8,
    dp: *const u64,
    ip: *const i64,
    q: HurrayQuantization,
    spec: HurrayBufferSpec,
    sp: HurraySyncPayload,
    ro: HurrayReaderOptions,
    wo: HurrayWriterOptions,
}

type Case<'a> = (&'static str, Box<dyn Fn() -> HurrayStatus + 'a>);

/// One case per (function, required pointer) pair, each passing NULL for that pointer only.
fn null_cases(f: &Fixture) -> Vec<Case<'_>> {
    let mut m = Mem::reading(Vec::new(), 0);
    let t = transport(&mut m);
    let no_read = HurrayTransport { read: None, ..t };
    let no_write = HurrayTransport { write: None, ..t };
    std::mem::forget(m); // the transports are never taken (every case fails first)
                         // Out-slots and inputs the cases point at: leaked, so they outlive the returned closures.
    let o: &'static mut Slots = Box::leak(Box::new(Slots {
        handle: hurray_core::BufferHandle::new(64, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap().encode(),
        one: [1],
        p: null_mut(),
        u8o: 0,
        u32o: 0,
        u64o: 0,
        us: 0,
        cp: null(),
        bp: null(),
        dp: null(),
        ip: null(),
        q: HurrayQuantization::default(),
        spec: HurrayBufferSpec::default(),
        sp: payload(null_mut(), 0, false, null_mut(), 0),
        // SAFETY: `HurrayReaderOptions` is plain integers, for which all-zero bytes are a valid value.
        ro: unsafe { std::mem::zeroed() },
        wo: HurrayWriterOptions { struct_size: 0, flags: 0 },
    }));
    let spec = HurrayBufferSpec { byte_size: 8, alignment: 64, device_tag: 0, sync_mode: 0, reserved: 0 };
    let q = HurrayQuantization::default();
    let slice_null = [HurrayIoSlice { ptr: null(), len: 8 }];
    let slice_ok = [HurrayIoSlice { ptr: f.backing.0.as_ptr() as *const u8, len: 8 }];
    let (b, d, td, l, tl, tb) = (f.buffer, f.desc, f.tdesc, f.list, f.tlist, f.tbuf);
    let (bld, ctx, r, w, ten) = (f.builder, f.ctx, f.reader, f.writer, f.tensor);
    let pp = &mut o.p as *mut _;
    let (u8p, u32p, u64p, usp) =
        (&mut o.u8o as *mut _, &mut o.u32o as *mut _, &mut o.u64o as *mut _, &mut o.us as *mut _);
    let (cpp, bpp, dpp, ipp) = (&mut o.cp as *mut _, &mut o.bp as *mut _, &mut o.dp as *mut _, &mut o.ip as *mut _);
    let (qp, specp, spp) = (&mut o.q as *mut _, &mut o.spec as *mut _, &mut o.sp as *mut _);
    let (rop, wop) = (&o.ro as *const _, &o.wo as *const _);
    let hb = o.handle.as_ptr();
    let one = o.one.as_ptr();
    let data = f.backing.0.as_ptr() as *mut c_void;
    // SAFETY: each case passes NULL for one required pointer (part of every function's contract); the other pointers
    // are the fixture's live handles or leaked slots that outlive the closures.
    unsafe {
        vec![
            (
                "hurray_buffer_from_ptr",
                Box::new(move || hurray_buffer_from_ptr(data, 8, 64, 0, None, null_mut(), null_mut()))
                    as Box<dyn Fn() -> HurrayStatus>,
            ),
            (
                "hurray_buffer_from_ptr",
                Box::new(move || hurray_buffer_from_ptr(null_mut(), 8, 64, 0, None, null_mut(), &mut null_mut())),
            ),
            (
                "hurray_buffer_handoff",
                Box::new(move || hurray_buffer_handoff(null(), data, null(), None, null_mut(), &mut null_mut())),
            ),
            (
                "hurray_buffer_handoff",
                Box::new(move || hurray_buffer_handoff(hb, data, null(), None, null_mut(), null_mut())),
            ),
            (
                "hurray_buffer_handoff",
                Box::new(move || hurray_buffer_handoff(hb, null_mut(), null(), None, null_mut(), &mut null_mut())),
            ),
            ("hurray_buffer_sync_payload", Box::new(move || hurray_buffer_sync_payload(null(), spp))),
            ("hurray_buffer_sync_payload", Box::new(move || hurray_buffer_sync_payload(b, null_mut()))),
            ("hurray_buffer_clone", Box::new(move || hurray_buffer_clone(null(), &mut null_mut()))),
            ("hurray_buffer_clone", Box::new(move || hurray_buffer_clone(b, null_mut()))),
            ("hurray_buffer_data_ptr", Box::new(move || hurray_buffer_data_ptr(null(), pp))),
            ("hurray_buffer_data_ptr", Box::new(move || hurray_buffer_data_ptr(tb, null_mut()))),
            ("hurray_buffer_byte_size", Box::new(move || hurray_buffer_byte_size(null(), u64p))),
            ("hurray_buffer_byte_size", Box::new(move || hurray_buffer_byte_size(tb, null_mut()))),
            ("hurray_buffer_alignment", Box::new(move || hurray_buffer_alignment(null(), u32p))),
            ("hurray_buffer_alignment", Box::new(move || hurray_buffer_alignment(b, null_mut()))),
            ("hurray_buffer_device_tag", Box::new(move || hurray_buffer_device_tag(null(), u8p))),
            ("hurray_buffer_device_tag", Box::new(move || hurray_buffer_device_tag(b, null_mut()))),
            ("hurray_buffer_sync_mode", Box::new(move || hurray_buffer_sync_mode(null(), u8p))),
            ("hurray_buffer_sync_mode", Box::new(move || hurray_buffer_sync_mode(b, null_mut()))),
            ("hurray_buffer_list_create", Box::new(move || hurray_buffer_list_create(null_mut()))),
            ("hurray_buffer_list_push", Box::new(move || hurray_buffer_list_push(null_mut(), b))),
            ("hurray_buffer_list_push", Box::new(move || hurray_buffer_list_push(l, null_mut()))),
            ("hurray_buffer_list_len", Box::new(move || hurray_buffer_list_len(null(), usp))),
            ("hurray_buffer_list_len", Box::new(move || hurray_buffer_list_len(tl, null_mut()))),
            ("hurray_buffer_list_get", Box::new(move || hurray_buffer_list_get(null(), 0, &mut null_mut()))),
            ("hurray_buffer_list_get", Box::new(move || hurray_buffer_list_get(tl, 0, null_mut()))),
            (
                "hurray_tensor_context_new",
                Box::new(move || hurray_tensor_context_new(4, null(), 8, null_mut(), None, &mut null_mut())),
            ),
            (
                "hurray_tensor_context_new",
                Box::new(move || hurray_tensor_context_new(4, null(), 0, null_mut(), None, null_mut())),
            ),
            ("hurray_tensor_context_abi_version", Box::new(move || hurray_tensor_context_abi_version(null(), u32p))),
            ("hurray_tensor_context_abi_version", Box::new(move || hurray_tensor_context_abi_version(ctx, null_mut()))),
            (
                "hurray_descriptor_block_quant",
                Box::new(move || {
                    hurray_descriptor_block_quant(null(), Box::leak(Box::new(HurrayBlockQuant::default())))
                }),
            ),
            ("hurray_descriptor_block_quant", Box::new(move || hurray_descriptor_block_quant(d, null_mut()))),
            (
                "hurray_descriptor_builder_set_block_quant",
                Box::new(move || hurray_descriptor_builder_set_block_quant(null_mut(), null())),
            ),
            (
                "hurray_quantize_plan",
                Box::new(move || hurray_quantize_plan(HURRAY_DTYPE_FLOAT32, one, 1, null(), null_mut())),
            ),
            (
                "hurray_quantize_plan",
                Box::new(move || hurray_quantize_plan(HURRAY_DTYPE_FLOAT32, null(), 1, null(), &mut null_mut())),
            ),
            ("hurray_dequantize", Box::new(move || hurray_dequantize(null(), null(), null(), 0, null_mut(), 0))),
            (
                "hurray_dequantize",
                Box::new(move || hurray_dequantize(d, null(), Box::leak(Box::new(8usize)), 1, null_mut(), 0)),
            ),
            (
                "hurray_dequantize_to",
                Box::new(move || hurray_dequantize_to(null(), null(), null(), 0, 11, null_mut(), 0)),
            ),
            (
                "hurray_dequantize_to",
                Box::new(move || hurray_dequantize_to(d, null(), Box::leak(Box::new(8usize)), 1, 11, null_mut(), 0)),
            ),
            ("hurray_quantize", Box::new(move || hurray_quantize(null(), null(), 0, null(), null(), 0))),
            ("hurray_quantize", Box::new(move || hurray_quantize(d, null(), 2, null(), null(), 0))),
            ("hurray_tensor_context_descriptor", Box::new(move || hurray_tensor_context_descriptor(null(), bpp, u64p))),
            (
                "hurray_tensor_context_descriptor",
                Box::new(move || hurray_tensor_context_descriptor(ctx, null_mut(), u64p)),
            ),
            (
                "hurray_tensor_context_descriptor",
                Box::new(move || hurray_tensor_context_descriptor(ctx, bpp, null_mut())),
            ),
            ("hurray_descriptor_decode", Box::new(move || hurray_descriptor_decode(null(), 8, &mut null_mut()))),
            ("hurray_descriptor_decode", Box::new(move || hurray_descriptor_decode(hb, 16, null_mut()))),
            ("hurray_descriptor_clone", Box::new(move || hurray_descriptor_clone(null(), &mut null_mut()))),
            ("hurray_descriptor_clone", Box::new(move || hurray_descriptor_clone(td, null_mut()))),
            ("hurray_descriptor_encoded", Box::new(move || hurray_descriptor_encoded(null(), bpp, usp))),
            ("hurray_descriptor_encoded", Box::new(move || hurray_descriptor_encoded(d, null_mut(), usp))),
            ("hurray_descriptor_encoded", Box::new(move || hurray_descriptor_encoded(d, bpp, null_mut()))),
            ("hurray_descriptor_element_type", Box::new(move || hurray_descriptor_element_type(null(), u8p))),
            ("hurray_descriptor_element_type", Box::new(move || hurray_descriptor_element_type(d, null_mut()))),
            ("hurray_descriptor_rank", Box::new(move || hurray_descriptor_rank(null(), usp))),
            ("hurray_descriptor_rank", Box::new(move || hurray_descriptor_rank(d, null_mut()))),
            ("hurray_descriptor_dims", Box::new(move || hurray_descriptor_dims(null(), dpp))),
            ("hurray_descriptor_dims", Box::new(move || hurray_descriptor_dims(d, null_mut()))),
            ("hurray_descriptor_layout", Box::new(move || hurray_descriptor_layout(null(), u8p))),
            ("hurray_descriptor_layout", Box::new(move || hurray_descriptor_layout(td, null_mut()))),
            ("hurray_descriptor_strides", Box::new(move || hurray_descriptor_strides(null(), ipp))),
            ("hurray_descriptor_strides", Box::new(move || hurray_descriptor_strides(d, null_mut()))),
            ("hurray_descriptor_byte_offset", Box::new(move || hurray_descriptor_byte_offset(null(), u64p))),
            ("hurray_descriptor_byte_offset", Box::new(move || hurray_descriptor_byte_offset(d, null_mut()))),
            ("hurray_descriptor_element_count", Box::new(move || hurray_descriptor_element_count(null(), u64p))),
            ("hurray_descriptor_element_count", Box::new(move || hurray_descriptor_element_count(d, null_mut()))),
            ("hurray_descriptor_buffer_count", Box::new(move || hurray_descriptor_buffer_count(null(), usp))),
            ("hurray_descriptor_buffer_count", Box::new(move || hurray_descriptor_buffer_count(d, null_mut()))),
            ("hurray_descriptor_quantization", Box::new(move || hurray_descriptor_quantization(null(), qp))),
            ("hurray_descriptor_quantization", Box::new(move || hurray_descriptor_quantization(d, null_mut()))),
            ("hurray_descriptor_metadata_count", Box::new(move || hurray_descriptor_metadata_count(null(), usp))),
            ("hurray_descriptor_metadata_count", Box::new(move || hurray_descriptor_metadata_count(d, null_mut()))),
            ("hurray_descriptor_name", Box::new(move || hurray_descriptor_name(null(), cpp, usp))),
            ("hurray_descriptor_name", Box::new(move || hurray_descriptor_name(d, null_mut(), usp))),
            ("hurray_descriptor_name", Box::new(move || hurray_descriptor_name(d, cpp, null_mut()))),
            ("hurray_descriptor_buffer_spec", Box::new(move || hurray_descriptor_buffer_spec(null(), 0, specp))),
            ("hurray_descriptor_buffer_spec", Box::new(move || hurray_descriptor_buffer_spec(d, 0, null_mut()))),
            (
                "hurray_descriptor_metadata_get",
                Box::new(move || hurray_descriptor_metadata_get(null(), 0, bpp, usp, bpp, usp)),
            ),
            (
                "hurray_descriptor_metadata_get",
                Box::new(move || hurray_descriptor_metadata_get(d, 0, null_mut(), usp, bpp, usp)),
            ),
            (
                "hurray_descriptor_metadata_get",
                Box::new(move || hurray_descriptor_metadata_get(d, 0, bpp, null_mut(), bpp, usp)),
            ),
            (
                "hurray_descriptor_metadata_get",
                Box::new(move || hurray_descriptor_metadata_get(d, 0, bpp, usp, null_mut(), usp)),
            ),
            (
                "hurray_descriptor_metadata_get",
                Box::new(move || hurray_descriptor_metadata_get(d, 0, bpp, usp, bpp, null_mut())),
            ),
            (
                "hurray_descriptor_builder_new",
                Box::new(move || hurray_descriptor_builder_new(HURRAY_DTYPE_INT8, null(), 1, &mut null_mut())),
            ),
            (
                "hurray_descriptor_builder_new",
                Box::new(move || hurray_descriptor_builder_new(HURRAY_DTYPE_INT8, one, 1, null_mut())),
            ),
            (
                "hurray_descriptor_builder_set_layout",
                Box::new(move || hurray_descriptor_builder_set_layout(null_mut(), HURRAY_LAYOUT_ROW_MAJOR, null(), 0)),
            ),
            (
                "hurray_descriptor_builder_set_layout",
                Box::new(move || hurray_descriptor_builder_set_layout(bld, HURRAY_LAYOUT_STRIDED, null(), 2)),
            ),
            (
                "hurray_descriptor_builder_set_byte_offset",
                Box::new(move || hurray_descriptor_builder_set_byte_offset(null_mut(), 0)),
            ),
            (
                "hurray_descriptor_builder_set_name",
                Box::new(move || hurray_descriptor_builder_set_name(null_mut(), c"n".as_ptr(), 1)),
            ),
            (
                "hurray_descriptor_builder_set_name",
                Box::new(move || hurray_descriptor_builder_set_name(bld, null(), 1)),
            ),
            (
                "hurray_descriptor_builder_add_buffer",
                Box::new(move || hurray_descriptor_builder_add_buffer(null_mut(), &spec)),
            ),
            (
                "hurray_descriptor_builder_add_buffer",
                Box::new(move || hurray_descriptor_builder_add_buffer(bld, null())),
            ),
            (
                "hurray_descriptor_builder_set_quantization",
                Box::new(move || hurray_descriptor_builder_set_quantization(null_mut(), &q)),
            ),
            (
                "hurray_descriptor_builder_set_quantization",
                Box::new(move || hurray_descriptor_builder_set_quantization(bld, null())),
            ),
            (
                "hurray_descriptor_builder_add_metadata",
                Box::new(move || hurray_descriptor_builder_add_metadata(null_mut(), b"k".as_ptr(), 1, null(), 0)),
            ),
            (
                "hurray_descriptor_builder_add_metadata",
                Box::new(move || hurray_descriptor_builder_add_metadata(bld, null(), 1, null(), 0)),
            ),
            (
                "hurray_descriptor_builder_add_metadata",
                Box::new(move || hurray_descriptor_builder_add_metadata(bld, b"k".as_ptr(), 1, null(), 1)),
            ),
            (
                "hurray_descriptor_builder_build",
                Box::new(move || hurray_descriptor_builder_build(null(), &mut null_mut())),
            ),
            ("hurray_descriptor_builder_build", Box::new(move || hurray_descriptor_builder_build(bld, null_mut()))),
            ("hurray_last_error_message", Box::new(move || hurray_last_error_message(null_mut(), 8, null_mut()))),
            ("hurray_reader_options_init", Box::new(move || hurray_reader_options_init(null_mut()))),
            ("hurray_reader_new", Box::new(move || hurray_reader_new(null(), rop, &mut null_mut()))),
            ("hurray_reader_new", Box::new(move || hurray_reader_new(&t, null(), null_mut()))),
            ("hurray_reader_new", Box::new(move || hurray_reader_new(&no_read, null(), &mut null_mut()))),
            ("hurray_reader_next_tensor", Box::new(move || hurray_reader_next_tensor(null_mut(), &mut null_mut()))),
            ("hurray_reader_next_tensor", Box::new(move || hurray_reader_next_tensor(r, null_mut()))),
            (
                "hurray_reader_set_buffer_pool_bytes",
                Box::new(move || hurray_reader_set_buffer_pool_bytes(null_mut(), 1 << 20)),
            ),
            ("hurray_descriptor_fields", Box::new(move || hurray_descriptor_fields(null(), &mut std::mem::zeroed()))),
            ("hurray_descriptor_fields", Box::new(move || hurray_descriptor_fields(d, null_mut()))),
            (
                "hurray_buffer_list_data_ptrs",
                Box::new(move || hurray_buffer_list_data_ptrs(null(), [null_mut(); 1].as_mut_ptr(), 1, &mut 0)),
            ),
            ("hurray_buffer_list_data_ptrs", Box::new(move || hurray_buffer_list_data_ptrs(tl, null_mut(), 1, &mut 0))),
            (
                "hurray_buffer_list_data_ptrs",
                Box::new(move || hurray_buffer_list_data_ptrs(tl, [null_mut(); 1].as_mut_ptr(), 1, null_mut())),
            ),
            ("hurray_name_check", Box::new(move || hurray_ffi::names::hurray_name_check(null(), 1, 0))),
            ("hurray_tensor_descriptor", Box::new(move || hurray_tensor_descriptor(null(), &mut null_mut()))),
            ("hurray_tensor_descriptor", Box::new(move || hurray_tensor_descriptor(ten, null_mut()))),
            ("hurray_tensor_buffers", Box::new(move || hurray_tensor_buffers(null(), &mut null_mut()))),
            ("hurray_tensor_buffers", Box::new(move || hurray_tensor_buffers(ten, null_mut()))),
            ("hurray_writer_options_init", Box::new(move || hurray_writer_options_init(null_mut()))),
            ("hurray_writer_new", Box::new(move || hurray_writer_new(null(), wop, &mut null_mut()))),
            ("hurray_writer_new", Box::new(move || hurray_writer_new(&t, null(), null_mut()))),
            ("hurray_writer_new", Box::new(move || hurray_writer_new(&no_write, null(), &mut null_mut()))),
            (
                "hurray_writer_write_tensor",
                Box::new(move || hurray_writer_write_tensor(null_mut(), d, slice_ok.as_ptr(), 1)),
            ),
            (
                "hurray_writer_write_tensor",
                Box::new(move || hurray_writer_write_tensor(w, null(), slice_ok.as_ptr(), 1)),
            ),
            ("hurray_writer_write_tensor", Box::new(move || hurray_writer_write_tensor(w, d, null(), 1))),
            ("hurray_writer_write_tensor", Box::new(move || hurray_writer_write_tensor(w, d, slice_null.as_ptr(), 1))),
            ("hurray_writer_finish", Box::new(move || hurray_writer_finish(null_mut()))),
            (
                "hurray_descriptor_with_name",
                Box::new(move || hurray_descriptor_with_name(null(), null(), 0, pp.cast())),
            ),
            ("hurray_descriptor_with_name", Box::new(move || hurray_descriptor_with_name(d, null(), 0, null_mut()))),
            ("hurray_descriptor_with_name", Box::new(move || hurray_descriptor_with_name(d, null(), 3, pp.cast()))),
            (
                "hurray_descriptor_encode_with_name",
                Box::new(move || hurray_descriptor_encode_with_name(null(), null(), 0, null_mut(), 0, null_mut())),
            ),
            ("hurray_decoder_reset", Box::new(move || hurray_ffi::decoder::hurray_decoder_reset(null_mut()))),
            (
                "hurray_call",
                Box::new(move || {
                    hurray_ffi::call::hurray_call(hurray_ffi::call::HURRAY_CALL_DECODER_RESET, 0, 0, 0, 0, 0, 0, 0, 0)
                }),
            ),
            (
                "hurray_descriptor_encode_with_name",
                Box::new(move || hurray_descriptor_encode_with_name(d, null(), 0, null_mut(), 0, null_mut())),
            ),
            (
                "hurray_descriptor_encode_with_name",
                Box::new(move || hurray_descriptor_encode_with_name(d, null(), 3, null_mut(), 0, pp.cast())),
            ),
            (
                "hurray_descriptor_new",
                Box::new(move || hurray_ffi::descriptor_spec::hurray_descriptor_new(null(), pp.cast())),
            ),
            (
                "hurray_descriptor_check",
                Box::new(move || hurray_ffi::descriptor_spec::hurray_descriptor_check(null(), null_mut(), pp.cast())),
            ),
            (
                "hurray_encoder_encode_encoded",
                Box::new(move || {
                    hurray_ffi::encoder::hurray_encoder_encode_encoded(null_mut(), hb, 16, null(), 0, null_mut())
                }),
            ),
            (
                "hurray_encoder_set_coalesce_bytes",
                Box::new(move || hurray_ffi::encoder::hurray_encoder_set_coalesce_bytes(null_mut(), 0)),
            ),
            (
                "hurray_decoder_next_item",
                Box::new(move || {
                    hurray_ffi::decoder::hurray_decoder_next_item(
                        null_mut(),
                        0,
                        0,
                        &mut std::mem::zeroed(),
                        leak(null_mut()),
                    )
                }),
            ),
            (
                "hurray_decoder_next_item",
                Box::new(move || {
                    hurray_ffi::decoder::hurray_decoder_next_item(null_mut(), 0, 0, &mut std::mem::zeroed(), null_mut())
                }),
            ),
            (
                "hurray_encoder_encode_composite",
                Box::new(move || {
                    hurray_ffi::composite::hurray_encoder_encode_composite(null_mut(), null(), null_mut())
                }),
            ),
            (
                "hurray_encoder_set_metadata",
                Box::new(move || hurray_ffi::stream_metadata::hurray_encoder_set_metadata(null_mut(), null(), 0)),
            ),
            (
                "hurray_writer_set_metadata",
                Box::new(move || hurray_ffi::stream_metadata::hurray_writer_set_metadata(null_mut(), null(), 0)),
            ),
            (
                "hurray_writer_set_metadata",
                Box::new(move || hurray_ffi::stream_metadata::hurray_writer_set_metadata(w, null(), 1)),
            ),
            (
                "hurray_decoder_next_header",
                Box::new(move || {
                    hurray_ffi::stream_metadata::hurray_decoder_next_header(null_mut(), 0, 0, &mut std::mem::zeroed())
                }),
            ),
            (
                "hurray_decoder_next_header",
                Box::new(move || hurray_ffi::stream_metadata::hurray_decoder_next_header(null_mut(), 0, 0, null_mut())),
            ),
            (
                "hurray_reader_metadata",
                Box::new(move || hurray_ffi::stream_metadata::hurray_reader_metadata(null_mut(), leak(null()), usp)),
            ),
            (
                "hurray_reader_metadata",
                Box::new(move || hurray_ffi::stream_metadata::hurray_reader_metadata(r, null_mut(), usp)),
            ),
            ("hurray_decoder_new", Box::new(move || hurray_ffi::decoder::hurray_decoder_new(null(), 0, null_mut()))),
            (
                "hurray_decoder_next",
                Box::new(move || hurray_ffi::decoder::hurray_decoder_next(null_mut(), 0, 0, &mut std::mem::zeroed())),
            ),
            (
                "hurray_decoder_next_batch",
                Box::new(move || {
                    hurray_ffi::decoder::hurray_decoder_next_batch(null_mut(), 0, 0, leak(std::mem::zeroed()), 1, usp)
                }),
            ),
            (
                "hurray_decoder_next_batch",
                Box::new(move || hurray_ffi::decoder::hurray_decoder_next_batch(null_mut(), 0, 0, null_mut(), 1, usp)),
            ),
            (
                "hurray_decoder_input_after",
                Box::new(move || {
                    hurray_ffi::decoder::hurray_decoder_input_after(null_mut(), leak::<*mut u8>(null_mut()), usp)
                }),
            ),
            (
                "hurray_decoder_input_after",
                Box::new(move || hurray_ffi::decoder::hurray_decoder_input_after(null_mut(), null_mut(), usp)),
            ),
            (
                "hurray_decoder_input_after",
                Box::new(move || {
                    hurray_ffi::decoder::hurray_decoder_input_after(null_mut(), leak::<*mut u8>(null_mut()), null_mut())
                }),
            ),
            (
                "hurray_decoder_set_options",
                Box::new(move || hurray_ffi::decoder::hurray_decoder_set_options(null_mut(), null())),
            ),
            (
                "hurray_decoder_set_buffer_pool_bytes",
                Box::new(move || hurray_ffi::decoder::hurray_decoder_set_buffer_pool_bytes(null_mut(), 0)),
            ),
            ("hurray_decoder_buffered", Box::new(move || hurray_ffi::decoder::hurray_decoder_buffered(null(), usp))),
            ("hurray_encoder_new", Box::new(move || hurray_ffi::encoder::hurray_encoder_new(null(), null_mut()))),
            (
                "hurray_encoder_encode",
                Box::new(move || hurray_ffi::encoder::hurray_encoder_encode(null_mut(), d, null(), 0, null_mut())),
            ),
            (
                "hurray_encoder_finish",
                Box::new(move || hurray_ffi::encoder::hurray_encoder_finish(null_mut(), null_mut())),
            ),
            (
                "hurray_encoder_output",
                Box::new(move || hurray_ffi::encoder::hurray_encoder_output(null(), null_mut(), 0, usp)),
            ),
            (
                "hurray_encoder_encode_batch",
                Box::new(move || {
                    hurray_ffi::encoder::hurray_encoder_encode_batch(
                        null_mut(),
                        0,
                        null(),
                        0,
                        0,
                        null_mut(),
                        0,
                        leak(Default::default()),
                    )
                }),
            ),
            (
                "hurray_encoder_encode_batch",
                Box::new(move || {
                    hurray_ffi::encoder::hurray_encoder_encode_batch(
                        null_mut(),
                        0,
                        null(),
                        0,
                        0,
                        null_mut(),
                        0,
                        null_mut(),
                    )
                }),
            ),
            (
                "hurray_tensor_destroy_many",
                Box::new(move || hurray_ffi::tensor::hurray_tensor_destroy_many(null_mut(), 1)),
            ),
            (
                "hurray_encoder_consume",
                Box::new(move || hurray_ffi::encoder::hurray_encoder_consume(null_mut(), 0, null_mut())),
            ),
            (
                "hurray_encoder_abort",
                Box::new(move || hurray_ffi::encoder::hurray_encoder_abort(null_mut(), 0, null_mut())),
            ),
            (
                "hurray_encoder_reset",
                Box::new(move || hurray_ffi::encoder::hurray_encoder_reset(null_mut(), null_mut())),
            ),
            // Sparse, paged and composite surface (src/sparse.rs, src/composite.rs).
            ("hurray_descriptor_version", Box::new(move || hurray_descriptor_version(null(), leak(0u16)))),
            ("hurray_descriptor_version", Box::new(move || hurray_descriptor_version(d, null_mut()))),
            (
                "hurray_descriptor_sparse",
                Box::new(move || hurray_descriptor_sparse(null(), leak(HurraySparse::default()))),
            ),
            ("hurray_descriptor_sparse", Box::new(move || hurray_descriptor_sparse(d, null_mut()))),
            (
                "hurray_descriptor_paging",
                Box::new(move || hurray_descriptor_paging(null(), leak(HurrayPaging::default()))),
            ),
            ("hurray_descriptor_paging", Box::new(move || hurray_descriptor_paging(d, null_mut()))),
            (
                "hurray_descriptor_composite",
                Box::new(move || hurray_descriptor_composite(null(), leak(HurrayCompositeMembership::default()))),
            ),
            ("hurray_descriptor_composite", Box::new(move || hurray_descriptor_composite(d, null_mut()))),
            (
                "hurray_descriptor_composite_role",
                Box::new(move || hurray_descriptor_composite_role(null(), 0, bpp, usp)),
            ),
            (
                "hurray_descriptor_composite_role",
                Box::new(move || hurray_descriptor_composite_role(d, 0, null_mut(), usp)),
            ),
            (
                "hurray_descriptor_composite_role",
                Box::new(move || hurray_descriptor_composite_role(d, 0, bpp, null_mut())),
            ),
            (
                "hurray_descriptor_builder_set_sparse",
                Box::new(move || hurray_descriptor_builder_set_sparse(null_mut(), leak(HurraySparse::default()))),
            ),
            (
                "hurray_descriptor_builder_set_sparse",
                Box::new(move || hurray_descriptor_builder_set_sparse(bld, null())),
            ),
            (
                "hurray_descriptor_builder_set_paging",
                Box::new(move || hurray_descriptor_builder_set_paging(null_mut(), leak(HurrayPaging::default()))),
            ),
            (
                "hurray_descriptor_builder_set_paging",
                Box::new(move || hurray_descriptor_builder_set_paging(bld, null())),
            ),
            ("hurray_sparse_densify", Box::new(move || hurray_sparse_densify(null(), slice_ok.as_ptr(), 1, data, 8))),
            ("hurray_sparse_densify", Box::new(move || hurray_sparse_densify(td, null(), 1, data, 8))),
            ("hurray_sparse_densify", Box::new(move || hurray_sparse_densify(td, slice_null.as_ptr(), 1, data, 8))),
            ("hurray_sparse_densify", Box::new(move || hurray_sparse_densify(td, slice_ok.as_ptr(), 1, null_mut(), 8))),
            ("hurray_paged_gather", Box::new(move || hurray_paged_gather(null(), slice_ok.as_ptr(), 1, data, 8))),
            ("hurray_paged_gather", Box::new(move || hurray_paged_gather(td, null(), 1, data, 8))),
            (
                "hurray_layout_check_contents",
                Box::new(move || hurray_ffi::sparse::hurray_layout_check_contents(null(), slice_ok.as_ptr(), 1)),
            ),
            (
                "hurray_reader_next_item",
                Box::new(move || hurray_reader_next_item(null_mut(), leak(null_mut()), leak(null_mut()))),
            ),
            ("hurray_reader_next_item", Box::new(move || hurray_reader_next_item(r, null_mut(), leak(null_mut())))),
            ("hurray_reader_next_item", Box::new(move || hurray_reader_next_item(r, leak(null_mut()), null_mut()))),
            ("hurray_composite_head", Box::new(move || hurray_composite_head(null(), leak(null_mut())))),
            ("hurray_composite_member_count", Box::new(move || hurray_composite_member_count(null(), usp))),
            (
                "hurray_composite_member",
                Box::new(move || hurray_composite_member(null(), 0, bpp, usp, leak(null_mut()), leak(null_mut()))),
            ),
            ("hurray_composite_builder_new", Box::new(move || hurray_composite_builder_new(null(), 0, null_mut()))),
            (
                "hurray_composite_builder_new",
                Box::new(move || hurray_composite_builder_new(null(), 3, leak(null_mut()))),
            ),
            (
                "hurray_composite_builder_add_tensor",
                Box::new(move || hurray_composite_builder_add_tensor(null_mut(), bpp as *const u8, 0, d, null(), 0)),
            ),
            (
                "hurray_composite_builder_add_composite",
                Box::new(move || hurray_composite_builder_add_composite(null_mut(), null(), 0, null_mut())),
            ),
            ("hurray_writer_write_composite", Box::new(move || hurray_writer_write_composite(null_mut(), null()))),
            ("hurray_writer_write_composite", Box::new(move || hurray_writer_write_composite(w, null()))),
            ("hurray_dlpack_export", Box::new(move || hurray_dlpack_export(null(), b, 0, leak(null_mut())))),
            ("hurray_dlpack_export", Box::new(move || hurray_dlpack_export(d, null(), 0, leak(null_mut())))),
            ("hurray_dlpack_export", Box::new(move || hurray_dlpack_export(d, b, 0, null_mut()))),
            ("hurray_dlpack_export_legacy", Box::new(move || hurray_dlpack_export_legacy(null(), b, leak(null_mut())))),
            ("hurray_dlpack_export_legacy", Box::new(move || hurray_dlpack_export_legacy(d, null(), leak(null_mut())))),
            ("hurray_dlpack_export_legacy", Box::new(move || hurray_dlpack_export_legacy(d, b, null_mut()))),
            // A NULL out pointer is refused before the struct is read (it is not consumed).
            ("hurray_dlpack_import", Box::new(move || hurray_dlpack_import(null_mut(), leak(null_mut())))),
            ("hurray_dlpack_import", Box::new(move || hurray_dlpack_import(leak(zeroed_versioned()), null_mut()))),
            (
                "hurray_dlpack_import_legacy",
                Box::new(move || hurray_dlpack_import_legacy(null_mut(), leak(null_mut()))),
            ),
            (
                "hurray_dlpack_import_legacy",
                Box::new(move || hurray_dlpack_import_legacy(leak(zeroed_legacy()), null_mut())),
            ),
        ]
    }
}

/// Functions that take no pointer (nothing to pass NULL for), and destroy functions (NULL is a
/// no-op, checked in `destroy_of_null_is_a_no_op`).
const NO_REQUIRED_POINTER: &[&str] = &["hurray_c_abi_version", "hurray_status_name"];
const DESTROYS: &[&str] = &[
    "hurray_buffer_destroy",
    "hurray_buffer_list_destroy",
    "hurray_tensor_context_destroy",
    "hurray_descriptor_destroy",
    "hurray_descriptor_builder_destroy",
    "hurray_reader_destroy",
    "hurray_tensor_destroy",
    "hurray_writer_destroy",
    "hurray_decoder_destroy",
    "hurray_encoder_destroy",
    "hurray_composite_destroy",
    "hurray_composite_builder_destroy",
];

fn zeroed_versioned() -> HurrayDLManagedTensorVersioned {
    // SAFETY: the struct is integers, raw pointers and an optional function pointer, for all of
    // which all-zero bytes are valid (NULL, None).
    unsafe { std::mem::zeroed() }
}

fn zeroed_legacy() -> HurrayDLManagedTensor {
    // SAFETY: as in `zeroed_versioned`.
    unsafe { std::mem::zeroed() }
}

/// A leaked out-slot for a NULL case (the case fails before writing it).
fn leak<T>(v: T) -> *mut T {
    Box::leak(Box::new(v))
}

fn header_functions() -> BTreeSet<String> {
    let h = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../hurray.h")).unwrap();
    let mut names = BTreeSet::new();
    for line in h.lines() {
        if line.starts_with("//") || line.starts_with("typedef") {
            continue;
        }
        if let Some(i) = line.find("hurray_") {
            let rest = &line[i..];
            if let Some(j) = rest.find('(') {
                let name = &rest[..j];
                if name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    names.insert(name.to_string());
                }
            }
        }
    }
    names
}

#[test]
fn null_for_every_required_pointer_is_null_pointer() {
    let f = Fixture::new();
    let cases = null_cases(&f);
    let mut covered = BTreeSet::new();
    for (name, call) in &cases {
        let s = call();
        assert_eq!(s, HURRAY_ERR_NULL_POINTER, "{name}: got {} ({})", status_name(s), last_error());
        assert!(last_error().contains("NULL"), "{name}: message {:?}", last_error());
        covered.insert(name.to_string());
    }
    // Every function in hurray.h has a case (the container surface has its own tests).
    let missing: Vec<String> = header_functions()
        .into_iter()
        .filter(|n| {
            !covered.contains(n) && !NO_REQUIRED_POINTER.contains(&n.as_str()) && !DESTROYS.contains(&n.as_str())
        })
        .filter(|n| !n.starts_with("hurray_file"))
        .collect();
    assert!(missing.is_empty(), "functions without a NULL case: {missing:?}");
    assert!(header_functions().len() >= 60);
    drop(cases);
    drop(f);
}

#[test]
fn destroy_of_null_is_a_no_op() {
    // SAFETY: NULL and a pointer to a NULL variable are both part of every destroy function's contract.
    unsafe {
        expect(hurray_buffer_destroy(null_mut()), HURRAY_OK);
        expect(hurray_buffer_destroy(&mut null_mut()), HURRAY_OK);
        expect(hurray_buffer_list_destroy(null_mut()), HURRAY_OK);
        expect(hurray_buffer_list_destroy(&mut null_mut()), HURRAY_OK);
        expect(hurray_tensor_context_destroy(null_mut()), HURRAY_OK);
        expect(hurray_tensor_context_destroy(&mut null_mut()), HURRAY_OK);
        expect(hurray_descriptor_destroy(null_mut()), HURRAY_OK);
        expect(hurray_descriptor_builder_destroy(null_mut()), HURRAY_OK);
        expect(hurray_descriptor_builder_destroy(&mut null_mut()), HURRAY_OK);
        expect(hurray_reader_destroy(null_mut()), HURRAY_OK);
        expect(hurray_reader_destroy(&mut null_mut()), HURRAY_OK);
        expect(hurray_tensor_destroy(null_mut()), HURRAY_OK);
        expect(hurray_tensor_destroy(&mut null_mut()), HURRAY_OK);
        expect(hurray_writer_destroy(null_mut()), HURRAY_OK);
        expect(hurray_writer_destroy(&mut null_mut()), HURRAY_OK);
        expect(hurray_composite_destroy(null_mut()), HURRAY_OK);
        expect(hurray_composite_destroy(&mut null_mut()), HURRAY_OK);
        expect(hurray_composite_builder_destroy(null_mut()), HURRAY_OK);
        expect(hurray_composite_builder_destroy(&mut null_mut()), HURRAY_OK);
    }
    for d in DESTROYS {
        assert!(header_functions().contains(*d), "{d}");
    }
}

/// Destroying through a stale copy of a handle (the original variable was nulled by its
/// destroy) is detected by the debug sentinel, and so is any use of it.
#[cfg(debug_assertions)]
#[test]
fn double_destroy_and_use_after_destroy_are_detected_in_debug_builds() {
    let mut f = Fixture::new();
    // SAFETY: this test runs only in debug builds, where destroyed shells stay allocated, so stale copies are readable;
    // the rest are the fixture's live handles and locals.
    unsafe {
        let mut stale = f.tensor;
        let (td, tl, tb) = (f.tdesc, f.tlist, f.tbuf);
        expect(hurray_tensor_destroy(&mut f.tensor), HURRAY_OK);
        assert!(f.tensor.is_null());
        expect(hurray_tensor_destroy(&mut stale), HURRAY_ERR_USE_AFTER_DESTROY);
        assert!(last_error().contains("not a live HurrayTensor"), "{}", last_error());
        expect(hurray_tensor_buffers(stale, &mut null_mut()), HURRAY_ERR_USE_AFTER_DESTROY);
        // The borrowed halves died with the tensor.
        let mut n = 0usize;
        expect(hurray_descriptor_rank(td, &mut n), HURRAY_ERR_USE_AFTER_DESTROY);
        expect(hurray_buffer_list_len(tl, &mut n), HURRAY_ERR_USE_AFTER_DESTROY);
        let mut size = 0u64;
        expect(hurray_buffer_byte_size(tb, &mut size), HURRAY_ERR_USE_AFTER_DESTROY);

        let d = f.desc;
        expect(hurray_descriptor_destroy(d), HURRAY_OK);
        expect(hurray_descriptor_destroy(d), HURRAY_ERR_USE_AFTER_DESTROY);
        expect(hurray_descriptor_rank(d, &mut n), HURRAY_ERR_USE_AFTER_DESTROY);
        f.desc = null_mut();

        let mut stale = f.builder;
        expect(hurray_descriptor_builder_destroy(&mut f.builder), HURRAY_OK);
        expect(hurray_descriptor_builder_destroy(&mut stale), HURRAY_ERR_USE_AFTER_DESTROY);
        expect(hurray_descriptor_builder_set_byte_offset(stale, 0), HURRAY_ERR_USE_AFTER_DESTROY);

        let mut stale = f.list;
        expect(hurray_buffer_list_destroy(&mut f.list), HURRAY_OK);
        expect(hurray_buffer_list_destroy(&mut stale), HURRAY_ERR_USE_AFTER_DESTROY);

        let mut stale = f.buffer;
        expect(hurray_buffer_destroy(&mut f.buffer), HURRAY_OK);
        expect(hurray_buffer_destroy(&mut stale), HURRAY_ERR_USE_AFTER_DESTROY);
        expect(hurray_buffer_data_ptr(stale, &mut null_mut()), HURRAY_ERR_USE_AFTER_DESTROY);

        let mut stale = f.ctx;
        expect(hurray_tensor_context_destroy(&mut f.ctx), HURRAY_OK);
        expect(hurray_tensor_context_destroy(&mut stale), HURRAY_ERR_USE_AFTER_DESTROY);

        let mut stale = f.reader;
        expect(hurray_reader_destroy(&mut f.reader), HURRAY_OK);
        expect(hurray_reader_destroy(&mut stale), HURRAY_ERR_USE_AFTER_DESTROY);
        expect(hurray_reader_next_tensor(stale, &mut null_mut()), HURRAY_ERR_USE_AFTER_DESTROY);
        expect(hurray_reader_set_buffer_pool_bytes(stale, 1 << 20), HURRAY_ERR_USE_AFTER_DESTROY);

        let mut stale = f.writer;
        expect(hurray_writer_destroy(&mut f.writer), HURRAY_OK);
        expect(hurray_writer_destroy(&mut stale), HURRAY_ERR_USE_AFTER_DESTROY);
        expect(hurray_writer_finish(stale), HURRAY_ERR_USE_AFTER_DESTROY);
    }
    // The stale destroys released nothing twice (checked by Fixture::drop: 2 releases).
}

#[test]
fn destroying_a_borrowed_handle_is_refused() {
    let mut f = Fixture::new();
    // SAFETY: the borrowed handles are the fixture's live ones; refused destroys leave them alive for Fixture::drop.
    unsafe {
        expect(hurray_descriptor_destroy(f.tdesc), HURRAY_ERR_INVALID_ARGUMENT);
        assert!(last_error().contains("borrowed"));
        let mut l = f.tlist;
        expect(hurray_buffer_list_destroy(&mut l), HURRAY_ERR_INVALID_ARGUMENT);
        assert_eq!(l, f.tlist, "a refused destroy leaves the caller's pointer");
        let mut b = f.tbuf;
        expect(hurray_buffer_destroy(&mut b), HURRAY_ERR_INVALID_ARGUMENT);
        // A list's element is borrowed too; pushing it (or anything borrowed) elsewhere is refused.
        expect(hurray_buffer_list_push(f.list, f.tbuf), HURRAY_ERR_INVALID_ARGUMENT);
        let mut own = f.buffer;
        expect(hurray_buffer_list_push(f.list, own), HURRAY_OK);
        f.buffer = null_mut(); // now the list's
        expect(hurray_buffer_destroy(&mut own), HURRAY_ERR_INVALID_ARGUMENT);
        expect(hurray_buffer_list_push(f.list, own), HURRAY_ERR_INVALID_ARGUMENT);
        let mut n = 0usize;
        expect(hurray_buffer_list_len(f.list, &mut n), HURRAY_OK);
        assert_eq!(n, 1);
        let mut got = null_mut();
        expect(hurray_buffer_list_get(f.list, 0, &mut got), HURRAY_OK);
        assert_eq!(got, own);
        expect(hurray_buffer_list_get(f.list, 1, &mut got), HURRAY_ERR_INVALID_ARGUMENT);
        // The tensor and its halves still work.
        expect(hurray_descriptor_rank(f.tdesc, &mut n), HURRAY_OK);
        assert_eq!(n, 1);
    }
}

static BUF_RELEASES: AtomicUsize = AtomicUsize::new(0);
static EVENT_RELEASES: AtomicUsize = AtomicUsize::new(0);
static OWNER_RELEASES: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn count_buffer_release(buffer: *mut c_void, ctx: *mut c_void) {
    // The callback gets back exactly the pointers it was registered with.
    assert_eq!(ctx as usize, buffer as usize + 1);
    BUF_RELEASES.fetch_add(1, Ordering::SeqCst);
}
unsafe extern "C" fn count_event_release(_h: *mut c_void, _ctx: *mut c_void) {
    EVENT_RELEASES.fetch_add(1, Ordering::SeqCst);
}
unsafe extern "C" fn count_owner_release(owner: *mut c_void) {
    assert_eq!(owner as usize, 0xABC0);
    OWNER_RELEASES.fetch_add(1, Ordering::SeqCst);
}

/// The release counters are process-wide: tests that use them take this lock.
static RELEASE_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[repr(C, align(4096))]
struct Page([u8; 4096]);

#[test]
fn buffer_release_runs_exactly_once_when_the_last_sharing_handle_goes() {
    let _g = RELEASE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let mut page = Box::new(Page([7; 4096]));
    let data = page.0.as_mut_ptr() as *mut c_void;
    let ctx = (data as usize + 1) as *mut c_void;
    let released = || BUF_RELEASES.load(Ordering::SeqCst);
    BUF_RELEASES.store(0, Ordering::SeqCst);
    // SAFETY: `page` outlives every buffer made over `data` (each is destroyed before the end of the block);
    // out-pointers are live locals.
    unsafe {
        // Plain: destroy → released once.
        let mut b = null_mut();
        expect(
            hurray_buffer_from_ptr(data, 4096, 4096, HURRAY_DEVICE_CPU, Some(count_buffer_release), ctx, &mut b),
            HURRAY_OK,
        );
        let mut p = null_mut();
        expect(hurray_buffer_data_ptr(b, &mut p), HURRAY_OK);
        assert_eq!(p, data, "zero copy: the handle points at the caller's memory");
        assert_eq!(released(), 0);
        expect(hurray_buffer_destroy(&mut b), HURRAY_OK);
        assert_eq!(released(), 1);
        // Cloned: only the last of the two handles releases.
        expect(
            hurray_buffer_from_ptr(data, 4096, 64, HURRAY_DEVICE_CPU, Some(count_buffer_release), ctx, &mut b),
            HURRAY_OK,
        );
        let mut c = null_mut();
        expect(hurray_buffer_clone(b, &mut c), HURRAY_OK);
        expect(hurray_buffer_destroy(&mut b), HURRAY_OK);
        assert_eq!(released(), 1);
        expect(hurray_buffer_data_ptr(c, &mut p), HURRAY_OK);
        assert_eq!(p, data);
        expect(hurray_buffer_destroy(&mut c), HURRAY_OK);
        assert_eq!(released(), 2);
        // In a list, with a clone of the list's (borrowed) element outliving the list.
        let mut l = null_mut();
        expect(hurray_buffer_list_create(&mut l), HURRAY_OK);
        expect(
            hurray_buffer_from_ptr(data, 4096, 64, HURRAY_DEVICE_CPU, Some(count_buffer_release), ctx, &mut b),
            HURRAY_OK,
        );
        expect(hurray_buffer_list_push(l, b), HURRAY_OK);
        expect(hurray_buffer_clone(b, &mut c), HURRAY_OK);
        expect(hurray_buffer_list_destroy(&mut l), HURRAY_OK);
        assert!(l.is_null());
        assert_eq!(released(), 2);
        expect(hurray_buffer_destroy(&mut c), HURRAY_OK);
        assert_eq!(released(), 3);
        // A list destroys every owned buffer once.
        expect(hurray_buffer_list_create(&mut l), HURRAY_OK);
        for _ in 0..5 {
            expect(
                hurray_buffer_from_ptr(data, 16, 64, HURRAY_DEVICE_CPU, Some(count_buffer_release), ctx, &mut b),
                HURRAY_OK,
            );
            expect(hurray_buffer_list_push(l, b), HURRAY_OK);
        }
        expect(hurray_buffer_list_destroy(&mut l), HURRAY_OK);
        assert_eq!(released(), 8);
        // Failures release nothing: misaligned data, bad alignment, unknown device.
        let odd = (data as usize + 8) as *mut c_void;
        expect(
            hurray_buffer_from_ptr(odd, 16, 64, 0, Some(count_buffer_release), ctx, &mut b),
            HURRAY_ERR_INVALID_ALIGNMENT,
        );
        expect(
            hurray_buffer_from_ptr(data, 16, 48, 0, Some(count_buffer_release), ctx, &mut b),
            HURRAY_ERR_INVALID_ALIGNMENT,
        );
        expect(hurray_buffer_from_ptr(data, 16, 64, 0, Some(count_buffer_release), ctx, &mut b), HURRAY_OK);
        expect(hurray_buffer_destroy(&mut b), HURRAY_OK);
        expect(
            hurray_buffer_from_ptr(data, 16, 4096, 99, Some(count_buffer_release), ctx, &mut b),
            HURRAY_ERR_INVALID_ARGUMENT,
        );
        assert_eq!(released(), 9);
        // A list is capped at 64 buffers; the refused buffer stays the caller's.
        expect(hurray_buffer_list_create(&mut l), HURRAY_OK);
        for _ in 0..64 {
            expect(hurray_buffer_from_ptr(data, 0, 64, 0, None, null_mut(), &mut b), HURRAY_OK);
            expect(hurray_buffer_list_push(l, b), HURRAY_OK);
        }
        expect(hurray_buffer_from_ptr(data, 0, 64, 0, Some(count_buffer_release), ctx, &mut b), HURRAY_OK);
        expect(hurray_buffer_list_push(l, b), HURRAY_ERR_LIMIT_EXCEEDED);
        expect(hurray_buffer_list_destroy(&mut l), HURRAY_OK);
        assert_eq!(released(), 9);
        expect(hurray_buffer_destroy(&mut b), HURRAY_OK);
        assert_eq!(released(), 10);
    }
    page.0[0] = 0;
}

fn payload(
    handle: *mut c_void,
    handle_tag: u8,
    release: bool,
    stream: *mut c_void,
    stream_tag: u8,
) -> HurraySyncPayload {
    HurraySyncPayload {
        sync_handle: handle,
        sync_handle_device_tag: handle_tag,
        consumer_stream_device_tag: stream_tag,
        event_release_fn: if release { Some(count_event_release) } else { None },
        event_release_context: null_mut(),
        consumer_stream: stream,
    }
}

#[test]
fn buffer_handoff_cross_checks_the_sync_mode_byte() {
    let _g = RELEASE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    BUF_RELEASES.store(0, Ordering::SeqCst);
    EVENT_RELEASES.store(0, Ordering::SeqCst);
    let mut page = Box::new(Page([0; 4096]));
    let data = page.0.as_mut_ptr() as *mut c_void;
    let ctx = (data as usize + 1) as *mut c_void;
    let ev = 0x1000 as *mut c_void;
    let st = 0x2000 as *mut c_void;
    let cuda = HURRAY_DEVICE_CUDA;
    let bytes = |dev: DeviceTag, sync: u8| {
        let mut h = hurray_core::BufferHandle::new(4096, 4096, dev, SyncMode::ProducerSynced).unwrap().encode();
        h[hurray_core::SYNC_MODE_OFFSET] = sync;
        h
    };
    let handoff = |h: &[u8; 16], p: Option<&HurraySyncPayload>| {
        let mut out = null_mut();
        // SAFETY: `h` is a live 16-byte array, `data` the page that outlives `out`, `p` NULL or a live reference.
        let s = unsafe {
            hurray_buffer_handoff(
                h.as_ptr(),
                data,
                p.map_or(null(), |p| p as *const _),
                Some(count_buffer_release),
                ctx,
                &mut out,
            )
        };
        if s == HURRAY_OK {
            let mut mode = 0u8;
            // SAFETY: `out` is the live buffer handoff just made; out-pointers are live locals.
            unsafe {
                expect(hurray_buffer_sync_mode(out, &mut mode), HURRAY_OK);
                assert_eq!(mode, h[13]);
                let mut got = payload(null_mut(), 9, false, null_mut(), 9);
                expect(hurray_buffer_sync_payload(out, &mut got), HURRAY_OK);
                if mode == HURRAY_SYNC_EVENT {
                    assert_eq!(got.sync_handle, ev);
                    // The consumer releases the event, once; Hurray never does.
                    (got.event_release_fn.unwrap())(got.sync_handle, got.event_release_context);
                } else if mode == HURRAY_SYNC_CONSUMER_STREAM {
                    assert_eq!(got.consumer_stream, st);
                } else {
                    assert!(
                        got.sync_handle.is_null() && got.consumer_stream.is_null() && got.event_release_fn.is_none()
                    );
                }
                expect(hurray_buffer_destroy(&mut out), HURRAY_OK);
            }
        } else {
            assert!(out.is_null(), "no handle on failure");
        }
        s
    };
    // Reserved (0x03–0xFE) and invalid (0xFF) modes, with and without a payload.
    for code in 0x03..=0xFFu8 {
        let h = bytes(DeviceTag::Cuda, code);
        assert_eq!(handoff(&h, None), HURRAY_ERR_INVALID_SYNC_MODE, "{code:#x}");
        assert_eq!(handoff(&h, Some(&payload(ev, cuda, true, null_mut(), 0))), HURRAY_ERR_INVALID_SYNC_MODE);
    }
    let ps = bytes(DeviceTag::Cuda, HURRAY_SYNC_PRODUCER_SYNCED);
    let evh = bytes(DeviceTag::Cuda, HURRAY_SYNC_EVENT);
    let csh = bytes(DeviceTag::Cuda, HURRAY_SYNC_CONSUMER_STREAM);
    let mm = HURRAY_ERR_SYNC_MODE_MISMATCH;
    // PRODUCER_SYNCED must carry neither a sync_handle nor a consumer_stream.
    assert_eq!(handoff(&ps, None), HURRAY_OK);
    assert_eq!(handoff(&ps, Some(&payload(null_mut(), 0, false, null_mut(), 0))), HURRAY_OK);
    assert_eq!(handoff(&ps, Some(&payload(ev, cuda, false, null_mut(), 0))), mm);
    assert_eq!(handoff(&ps, Some(&payload(null_mut(), 0, false, st, cuda))), mm);
    // EVENT needs a sync_handle, an event_release_fn and a matching device tag.
    assert_eq!(handoff(&evh, None), mm);
    assert_eq!(handoff(&evh, Some(&payload(null_mut(), cuda, true, null_mut(), 0))), mm);
    assert_eq!(handoff(&evh, Some(&payload(ev, cuda, false, null_mut(), 0))), mm);
    assert_eq!(handoff(&evh, Some(&payload(ev, HURRAY_DEVICE_ROCM, true, null_mut(), 0))), mm);
    assert_eq!(handoff(&evh, Some(&payload(ev, cuda, true, null_mut(), 0))), HURRAY_OK);
    // CONSUMER_STREAM needs a consumer_stream with a matching device tag.
    assert_eq!(handoff(&csh, None), mm);
    assert_eq!(handoff(&csh, Some(&payload(null_mut(), 0, false, null_mut(), cuda))), mm);
    assert_eq!(handoff(&csh, Some(&payload(null_mut(), 0, false, st, HURRAY_DEVICE_CPU))), mm);
    assert_eq!(handoff(&csh, Some(&payload(null_mut(), 0, false, st, cuda))), HURRAY_OK);
    // Malformed handles.
    let mut bad = ps;
    bad[8..12].copy_from_slice(&3u32.to_le_bytes());
    assert_eq!(handoff(&bad, None), HURRAY_ERR_INVALID_ALIGNMENT);
    bad = ps;
    bad[12] = 77;
    assert_eq!(handoff(&bad, None), HURRAY_ERR_INVALID_ARGUMENT);
    bad = ps;
    bad[15] = 1;
    assert_eq!(handoff(&bad, None), HURRAY_ERR_CORRUPT);
    // Released: once per successful handoff; the event only by the consumer (above).
    assert_eq!(BUF_RELEASES.load(Ordering::SeqCst), 4);
    assert_eq!(EVENT_RELEASES.load(Ordering::SeqCst), 1);
    page.0[0] = 1;
}

#[test]
fn tensor_context_owner_release_runs_exactly_once() {
    let _g = RELEASE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    OWNER_RELEASES.store(0, Ordering::SeqCst);
    let owner = 0xABC0 as *mut c_void;
    let enc = dense(ElementType::Int16, &[3]).desc.encode().unwrap();
    // SAFETY: `enc` is valid for its length; `owner` is only passed back to the release callback, never dereferenced.
    unsafe {
        let mut c = null_mut();
        expect(
            hurray_tensor_context_new(4, enc.as_ptr(), enc.len() as u64, owner, Some(count_owner_release), &mut c),
            HURRAY_OK,
        );
        let mut v = 0u32;
        expect(hurray_tensor_context_abi_version(c, &mut v), HURRAY_OK);
        assert_eq!(v, 4);
        let (mut p, mut n) = (null(), 0u64);
        expect(hurray_tensor_context_descriptor(c, &mut p, &mut n), HURRAY_OK);
        assert_eq!(std::slice::from_raw_parts(p, n as usize), &enc[..]);
        assert_ne!(p, enc.as_ptr(), "the context owns a copy");
        assert_eq!(OWNER_RELEASES.load(Ordering::SeqCst), 0);
        expect(hurray_tensor_context_destroy(&mut c), HURRAY_OK);
        assert!(c.is_null());
        assert_eq!(OWNER_RELEASES.load(Ordering::SeqCst), 1);
        expect(hurray_tensor_context_destroy(&mut c), HURRAY_OK);
        assert_eq!(OWNER_RELEASES.load(Ordering::SeqCst), 1);
        // Empty descriptor: NULL and 0.
        expect(hurray_tensor_context_new(7, null(), 0, owner, Some(count_owner_release), &mut c), HURRAY_OK);
        expect(hurray_tensor_context_descriptor(c, &mut p, &mut n), HURRAY_OK);
        assert!(p.is_null() && n == 0);
        expect(hurray_tensor_context_destroy(&mut c), HURRAY_OK);
        assert_eq!(OWNER_RELEASES.load(Ordering::SeqCst), 2);
        // Failures release nothing.
        expect(
            hurray_tensor_context_new(0, enc.as_ptr(), enc.len() as u64, owner, Some(count_owner_release), &mut c),
            HURRAY_ERR_INVALID_ARGUMENT,
        );
        expect(
            hurray_tensor_context_new(4, enc.as_ptr(), enc.len() as u64 - 1, owner, Some(count_owner_release), &mut c),
            HURRAY_ERR_CORRUPT,
        );
        expect(
            hurray_tensor_context_new(4, enc.as_ptr(), (16 << 20) + 1, owner, Some(count_owner_release), &mut c),
            HURRAY_ERR_LIMIT_EXCEEDED,
        );
        assert!(c.is_null());
        assert_eq!(OWNER_RELEASES.load(Ordering::SeqCst), 2);
    }
}

#[test]
fn transport_release_is_never_called_when_new_fails() {
    let mut m = Mem::reading(Vec::new(), 0);
    let t = transport(&mut m);
    // SAFETY: `m` outlives `t` and every reader/writer made; option structs and out-pointers are live locals; all-zero
    // options are plain integers.
    unsafe {
        let mut ro = std::mem::zeroed::<HurrayReaderOptions>();
        expect(hurray_reader_options_init(&mut ro), HURRAY_OK);
        let bad_reader_opts = [
            HurrayReaderOptions { struct_size: 8, ..ro },
            HurrayReaderOptions { flags: 2, ..ro },
            HurrayReaderOptions { reserved: 1, ..ro },
            HurrayReaderOptions { max_rank: 33, ..ro },
            HurrayReaderOptions { max_descriptor_bytes: (16 << 20) + 1, ..ro },
        ];
        for o in &bad_reader_opts {
            let mut r = null_mut();
            expect(hurray_reader_new(&t, o, &mut r), HURRAY_ERR_INVALID_ARGUMENT);
            assert!(r.is_null());
        }
        let mut wo = std::mem::zeroed::<HurrayWriterOptions>();
        expect(hurray_writer_options_init(&mut wo), HURRAY_OK);
        for o in [HurrayWriterOptions { struct_size: 4, ..wo }, HurrayWriterOptions { flags: 6, ..wo }] {
            let mut w = null_mut();
            expect(hurray_writer_new(&t, &o, &mut w), HURRAY_ERR_INVALID_ARGUMENT);
            assert!(w.is_null());
        }
        let mut r = null_mut();
        expect(hurray_reader_new(&HurrayTransport { read: None, ..t }, null(), &mut r), HURRAY_ERR_NULL_POINTER);
        let mut w = null_mut();
        expect(hurray_writer_new(&HurrayTransport { write: None, ..t }, null(), &mut w), HURRAY_ERR_NULL_POINTER);
    }
    assert_eq!(m.released, 0);
    // A larger struct_size (a newer caller) is accepted.
    // SAFETY: `m` outlives `t` and the reader made; option structs and out-pointers are live locals; all-zero options
    // are plain integers.
    unsafe {
        let mut ro = std::mem::zeroed::<HurrayReaderOptions>();
        hurray_reader_options_init(&mut ro);
        ro.struct_size += 8;
        let mut r = null_mut();
        expect(hurray_reader_new(&t, &ro, &mut r), HURRAY_OK);
        expect(hurray_reader_destroy(&mut r), HURRAY_OK);
    }
    assert_eq!(m.released, 1);
}

#[test]
fn last_error_message_is_per_thread_truncates_and_reports_its_length() {
    // SAFETY: a NULL data pointer is part of the contract (rejected); `b` is a live local.
    unsafe {
        let mut b = null_mut();
        expect(hurray_buffer_from_ptr(null_mut(), 8, 64, 0, None, null_mut(), &mut b), HURRAY_ERR_NULL_POINTER);
    }
    let full = last_error();
    assert!(full.starts_with("hurray_buffer_from_ptr: "), "{full}");
    let mut len = 0usize;
    // SAFETY: every buffer passed is a live local array of at least the capacity given, or NULL with capacity 0; a NULL
    // buffer with a non-zero capacity is part of the contract (rejected), and `out_len` may be NULL.
    unsafe {
        // Length query.
        assert_eq!(hurray_last_error_message(null_mut(), 0, &mut len), HURRAY_ERR_BUFFER_TOO_SMALL);
        assert_eq!(len, full.len());
        // Truncated: cap - 1 bytes and a NUL.
        let mut buf = [0x55 as c_char; 8];
        assert_eq!(hurray_last_error_message(buf.as_mut_ptr(), 5, &mut len), HURRAY_ERR_BUFFER_TOO_SMALL);
        assert_eq!(len, full.len());
        let got: Vec<u8> = buf[..5].iter().map(|&c| c as u8).collect();
        assert_eq!(&got[..4], &full.as_bytes()[..4]);
        assert_eq!(got[4], 0);
        assert_eq!(buf[5] as u8, 0x55, "nothing written past cap");
        // Exactly enough room; out_len is optional.
        let mut exact = vec![0 as c_char; full.len() + 1];
        assert_eq!(hurray_last_error_message(exact.as_mut_ptr(), exact.len(), null_mut()), HURRAY_OK);
        assert_eq!(exact[full.len()], 0);
        assert_eq!(hurray_last_error_message(null_mut(), 3, null_mut()), HURRAY_ERR_NULL_POINTER);
    }
    // Another thread has its own, empty slot.
    std::thread::spawn(|| {
        let mut len = 99usize;
        // SAFETY: a NULL buffer with capacity 0 is allowed; `len` is a live local.
        assert_eq!(unsafe { hurray_last_error_message(null_mut(), 0, &mut len) }, HURRAY_OK);
        assert_eq!(len, 0);
        let mut buf = [1 as c_char; 4];
        // SAFETY: `buf` holds 4 chars; `len` is a live local.
        assert_eq!(unsafe { hurray_last_error_message(buf.as_mut_ptr(), 4, &mut len) }, HURRAY_OK);
        assert_eq!(buf[0], 0);
    })
    .join()
    .unwrap();
}

#[test]
fn every_status_has_its_name_and_sign() {
    let all: &[(HurrayStatus, &str)] = &[
        (HURRAY_OK, "HURRAY_OK"),
        (HURRAY_END_OF_STREAM, "HURRAY_END_OF_STREAM"),
        (HURRAY_NEED_INPUT, "HURRAY_NEED_INPUT"),
        (HURRAY_ERR_INVALID_MAGIC, "HURRAY_ERR_INVALID_MAGIC"),
        (HURRAY_ERR_VERSION_MISMATCH, "HURRAY_ERR_VERSION_MISMATCH"),
        (HURRAY_ERR_INVALID_LAYOUT, "HURRAY_ERR_INVALID_LAYOUT"),
        (HURRAY_ERR_INVALID_TYPE, "HURRAY_ERR_INVALID_TYPE"),
        (HURRAY_ERR_BUFFER_TOO_SMALL, "HURRAY_ERR_BUFFER_TOO_SMALL"),
        (HURRAY_ERR_NULL_POINTER, "HURRAY_ERR_NULL_POINTER"),
        (HURRAY_ERR_INTERNAL_PANIC, "HURRAY_ERR_INTERNAL_PANIC"),
        (HURRAY_ERR_INVALID_SYNC_MODE, "HURRAY_ERR_INVALID_SYNC_MODE"),
        (HURRAY_ERR_SYNC_MODE_MISMATCH, "HURRAY_ERR_SYNC_MODE_MISMATCH"),
        (HURRAY_ERR_TRANSPORT, "HURRAY_ERR_TRANSPORT"),
        (HURRAY_ERR_TRUNCATED, "HURRAY_ERR_TRUNCATED"),
        (HURRAY_ERR_CORRUPT, "HURRAY_ERR_CORRUPT"),
        (HURRAY_ERR_POISONED, "HURRAY_ERR_POISONED"),
        (HURRAY_ERR_SINK_CLOSED, "HURRAY_ERR_SINK_CLOSED"),
        (HURRAY_ERR_LIMIT_EXCEEDED, "HURRAY_ERR_LIMIT_EXCEEDED"),
        (HURRAY_ERR_INVALID_ARGUMENT, "HURRAY_ERR_INVALID_ARGUMENT"),
        (HURRAY_ERR_UNSUPPORTED, "HURRAY_ERR_UNSUPPORTED"),
        (HURRAY_ERR_INVALID_ALIGNMENT, "HURRAY_ERR_INVALID_ALIGNMENT"),
        (HURRAY_ERR_INVALID_SHAPE, "HURRAY_ERR_INVALID_SHAPE"),
        (HURRAY_ERR_USE_AFTER_DESTROY, "HURRAY_ERR_USE_AFTER_DESTROY"),
        (HURRAY_ERR_OUT_OF_MEMORY, "HURRAY_ERR_OUT_OF_MEMORY"),
        (HURRAY_ERR_NOT_FOUND, "HURRAY_ERR_NOT_FOUND"),
        (HURRAY_ERR_DUPLICATE_NAME, "HURRAY_ERR_DUPLICATE_NAME"),
        (HURRAY_ERR_INVALID_STATE, "HURRAY_ERR_INVALID_STATE"),
    ];
    let mut seen = BTreeSet::new();
    for &(s, name) in all {
        assert_eq!(status_name(s), name);
        assert!(seen.insert(s), "{name} duplicates a value");
        assert!(name.starts_with("HURRAY_ERR_") == (s < 0), "{name}: every error is negative, nothing else is");
    }
    assert_eq!(HURRAY_OK, 0);
    const { assert!(HURRAY_END_OF_STREAM > 0) };
    // The original codes, fixed (docs/spec/c-abi.md §Status codes).
    assert_eq!((HURRAY_ERR_INVALID_MAGIC, HURRAY_ERR_NULL_POINTER, HURRAY_ERR_INTERNAL_PANIC), (-1, -6, -7));
    for unknown in [3, 100, -25, -1000, i32::MIN, i32::MAX] {
        assert_eq!(status_name(unknown), "HURRAY_UNKNOWN_STATUS");
    }
    assert!(!hurray_status_name(-3).is_null());
    // Every status #define in hurray.h is in the table above.
    let h = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../hurray.h")).unwrap();
    let defined: BTreeSet<&str> = h
        .lines()
        .filter_map(|l| l.strip_prefix("#define "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| {
            *n == "HURRAY_OK"
                || *n == "HURRAY_END_OF_STREAM"
                || *n == "HURRAY_NEED_INPUT"
                || n.starts_with("HURRAY_ERR_")
        })
        .collect();
    let named: BTreeSet<&str> = all.iter().map(|(_, n)| *n).collect();
    assert_eq!(defined, named);
}

#[test]
fn c_constants_equal_the_core_discriminants() {
    let dtypes = [
        HURRAY_DTYPE_BOOL,
        HURRAY_DTYPE_INT8,
        HURRAY_DTYPE_INT16,
        HURRAY_DTYPE_INT32,
        HURRAY_DTYPE_INT64,
        HURRAY_DTYPE_UINT8,
        HURRAY_DTYPE_UINT16,
        HURRAY_DTYPE_UINT32,
        HURRAY_DTYPE_UINT64,
        HURRAY_DTYPE_FLOAT16,
        HURRAY_DTYPE_BFLOAT16,
        HURRAY_DTYPE_FLOAT32,
        HURRAY_DTYPE_FLOAT64,
        HURRAY_DTYPE_COMPLEX64,
        HURRAY_DTYPE_COMPLEX128,
        HURRAY_DTYPE_FLOAT8_E4M3FN,
        HURRAY_DTYPE_FLOAT8_E5M2,
        HURRAY_DTYPE_INT4,
        HURRAY_DTYPE_UINT4,
    ];
    for (c, et) in dtypes.iter().zip(ElementType::ALL) {
        assert_eq!(*c, et as u8, "{et:?}");
        assert_eq!(*c, et.code());
    }
    assert_eq!(HURRAY_LAYOUT_ROW_MAJOR, LayoutDescriptor::RowMajor.code());
    assert_eq!(HURRAY_LAYOUT_COLUMN_MAJOR, LayoutDescriptor::ColumnMajor.code());
    assert_eq!(HURRAY_LAYOUT_STRIDED, LayoutDescriptor::Strided(vec![]).code());
    let devices = [
        (HURRAY_DEVICE_CPU, DeviceTag::Cpu),
        (HURRAY_DEVICE_CUDA, DeviceTag::Cuda),
        (HURRAY_DEVICE_CUDA_HOST, DeviceTag::CudaHost),
        (HURRAY_DEVICE_ROCM, DeviceTag::Rocm),
        (HURRAY_DEVICE_METAL, DeviceTag::Metal),
        (HURRAY_DEVICE_VULKAN, DeviceTag::Vulkan),
        (HURRAY_DEVICE_IPC, DeviceTag::Ipc),
    ];
    for (c, d) in devices {
        assert_eq!(c, d as u8);
        assert_eq!(DeviceTag::from_code(c).unwrap(), d);
    }
    assert!(DeviceTag::from_code(7).is_err());
    for (c, s) in [
        (HURRAY_SYNC_PRODUCER_SYNCED, SyncMode::ProducerSynced),
        (HURRAY_SYNC_EVENT, SyncMode::Event),
        (HURRAY_SYNC_CONSUMER_STREAM, SyncMode::ConsumerStream),
    ] {
        assert_eq!(c, s as u8);
    }
    assert_eq!(SyncMode::default(), SyncMode::ProducerSynced);
    assert_eq!(HURRAY_SYNC_INVALID, 0xFF);
    assert!(SyncMode::from_code(HURRAY_SYNC_INVALID).is_err());
    let q = |q: hurray_core::Quantization| q.code();
    assert_eq!(
        HURRAY_QUANT_PER_TENSOR_AFFINE,
        q(hurray_core::Quantization::PerTensorAffine { scale: 1.0, bias: 0.0, dequantized: ElementType::Float32 })
    );
    assert_eq!(
        HURRAY_QUANT_PER_CHANNEL_AFFINE,
        q(hurray_core::Quantization::PerChannelAffine { axis: 0, dequantized: ElementType::Float32 })
    );
    assert_eq!(HURRAY_QUANT_CAST, q(hurray_core::Quantization::Cast { dequantized: ElementType::Float32 }));
    assert_eq!(HURRAY_QUANT_NONE, 0);
    assert_eq!(u64::from(HURRAY_MIN_BUFFER_ALIGNMENT), hurray_core::MIN_BUFFER_ALIGNMENT);
    assert_eq!(u64::from(HURRAY_DEVICE_BUFFER_ALIGNMENT), hurray_core::DEVICE_BUFFER_ALIGNMENT);
    assert_eq!(u64::from(HURRAY_MAX_BUFFER_ALIGNMENT), hurray_core::MAX_BUFFER_ALIGNMENT);
    assert_eq!(HURRAY_MAX_RANK as usize, hurray_core::MAX_RANK);
    assert_eq!(HURRAY_MAX_NAME_BYTES as usize, hurray_core::MAX_NAME_BYTES);
    assert_eq!(HURRAY_MAX_METADATA_ENTRIES as usize, hurray_core::MAX_METADATA_ENTRIES);
    assert_eq!(HURRAY_MAX_METADATA_KEY_BYTES as usize, hurray_core::MAX_METADATA_KEY_BYTES);
    assert_eq!(HURRAY_MAX_METADATA_VALUE_BYTES as usize, hurray_core::MAX_METADATA_VALUE_BYTES);
    assert_eq!(HURRAY_MAX_DESCRIPTOR_BYTES as usize, hurray_core::MAX_DESCRIPTOR_BYTES);
    assert_eq!(HURRAY_BUFFER_HANDLE_BYTES as usize, hurray_core::BUFFER_HANDLE_BYTES);
    assert_eq!(hurray_core::SYNC_MODE_OFFSET, 13);
    assert_eq!(HURRAY_C_ABI_VERSION, 4);
    assert_eq!(hurray_c_abi_version(), HURRAY_C_ABI_VERSION);
}
