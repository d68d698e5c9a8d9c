pub mod machine_ref;
pub mod mosaic_ref;
pub mod os_ref;
pub mod tlb_ref;
