pub mod mosaic_ref;
pub mod tlb_ref;
