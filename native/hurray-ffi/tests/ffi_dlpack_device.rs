//! A DLPack export says where the memory is (docs/spec/dlpack.md): a buffer a reader filled is
//! host memory, `kDLCPU`, whatever device the producer's buffer table named, while a caller's
//! own buffer (`hurray_buffer_from_ptr`) keeps the device the caller gave it.

mod ffi_common;

use std::ffi::c_void;
use std::ptr::null_mut;

use ffi_common::*;
use hurray_core::{BufferHandle, DescriptorParts, DeviceTag, ElementType, Shape, SyncMode};
use hurray_ffi::buffer::*;
use hurray_ffi::buffer_list::hurray_buffer_list_get;
use hurray_ffi::descriptor::*;
use hurray_ffi::dlpack::*;
use hurray_ffi::reader::*;
use hurray_ffi::tensor::*;
use hurray_ffi::*;

/// A float32[4] descriptor whose one buffer the table places on `tag`.
fn tagged(tag: DeviceTag) -> Vec<u8> {
    let h = BufferHandle::new(16, 4096, tag, SyncMode::ProducerSynced).unwrap();
    let parts = DescriptorParts {
        buffers: vec![h],
        ..DescriptorParts::new(ElementType::Float32, Shape::new(vec![4]).unwrap())
    };
    parts.build().unwrap().encode().unwrap()
}

/// The device type of a DLPack export of `buffer` (buffer 0 of `d`), the export freed after.
unsafe fn exported_device(d: *const HurrayDescriptor, buffer: *const HurrayBuffer) -> i32 {
    let mut m = null_mut();
    // SAFETY: `d` and `buffer` are live handles (the caller's contract); `m` a live local.
    unsafe {
        expect(hurray_dlpack_export(d, buffer, 0, &mut m), HURRAY_OK);
        let device = (*m).dl_tensor.device.device_type;
        ((*m).deleter.expect("a deleter"))(m);
        device
    }
}

#[test]
fn a_read_tensor_exports_as_host_memory_whatever_its_table_says() {
    for tag in [DeviceTag::Cuda, DeviceTag::Rocm, DeviceTag::CudaHost, DeviceTag::Vulkan, DeviceTag::Cpu] {
        let payload: Vec<u8> = [1f32, 2.0, 3.0, 4.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        let wire = ffi_write(&[(tagged(tag), vec![payload])], 4096, false);
        let m = Mem::reading(wire, 4096);
        let t = transport(&mut *Box::leak(m));
        // SAFETY: `t` lives for the test (its Mem is leaked); every out-pointer is a live local.
        unsafe {
            let mut r = null_mut();
            expect(hurray_reader_new(&t, std::ptr::null(), &mut r), HURRAY_OK);
            let mut tensor = null_mut();
            expect(hurray_reader_next_tensor(r, &mut tensor), HURRAY_OK);
            let mut d = null_mut();
            expect(hurray_tensor_descriptor(tensor, &mut d), HURRAY_OK);
            let mut list = null_mut();
            expect(hurray_tensor_buffers(tensor, &mut list), HURRAY_OK);
            let mut b = null_mut();
            expect(hurray_buffer_list_get(list, 0, &mut b), HURRAY_OK);
            let mut dev = 99u8;
            expect(hurray_buffer_device_tag(b, &mut dev), HURRAY_OK);
            assert_eq!(dev, HURRAY_DEVICE_CPU, "{tag:?}: the buffer is host memory");
            let mut spec = HurrayBufferSpec::default();
            expect(hurray_descriptor_buffer_spec(d, 0, &mut spec), HURRAY_OK);
            assert_eq!(spec.device_tag, tag.code(), "the descriptor keeps the declared device");
            assert_eq!(exported_device(d, b), 1, "{tag:?}: kDLCPU");
            expect(hurray_tensor_destroy(&mut tensor), HURRAY_OK);
            expect(hurray_reader_destroy(&mut r), HURRAY_OK);
        }
    }
}

#[test]
fn a_callers_buffer_keeps_the_device_it_was_given() {
    let mut mem = vec![0u8; 4096 + 16];
    let at = mem.as_mut_ptr().wrapping_add(mem.as_ptr().align_offset(4096)) as *mut c_void;
    let d = decode(&tagged(DeviceTag::Cuda));
    // SAFETY: `at` points at 16 bytes of `mem`, which outlives the buffer; out-pointers are locals.
    unsafe {
        let mut b = null_mut();
        expect(hurray_buffer_from_ptr(at, 16, 4096, HURRAY_DEVICE_CUDA, None, null_mut(), &mut b), HURRAY_OK);
        assert_eq!(exported_device(d, b), 2, "kDLCUDA, as the caller said");
        expect(hurray_buffer_destroy(&mut b), HURRAY_OK);
        expect(hurray_descriptor_destroy(d), HURRAY_OK);
    }
}
