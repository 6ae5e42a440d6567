//! Reading back a picture a browser rendered: the PNG's size and how many
//! of its pixels have a colour (the browser and fleet-view tests).

use std::path::Path;

/// The PNG's width and height, its pixels of `rgb` (exactly), and its
/// pixels drawn (not white); an RGB or RGBA PNG.
pub fn count_colour(png_path: &Path, rgb: [u8; 3]) -> (u32, u32, usize, usize) {
    let decoder =
        png::Decoder::new(std::io::BufReader::new(std::fs::File::open(png_path).expect("the PNG")));
    let mut reader = decoder.read_info().expect("a valid PNG");
    let mut buf = vec![0; reader.output_buffer_size().expect("size")];
    let info = reader.next_frame(&mut buf).expect("a frame");
    let channels = match info.color_type {
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        other => panic!("unexpected PNG colour type {other:?}"),
    };
    let pixels = buf[..info.buffer_size()].chunks(channels);
    let (mut matching, mut drawn) = (0, 0);
    for p in pixels {
        if p[..3] == rgb {
            matching += 1;
        }
        if p[..3] != [255, 255, 255] {
            drawn += 1;
        }
    }
    (info.width, info.height, matching, drawn)
}
