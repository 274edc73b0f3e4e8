//! The viewport on the GPU: point layers drawn as screen-aligned quads (one instance per point), shaded by the
//! normal against the view direction so walls and floors read apart, into an offscreen image that egui's pass
//! then shows.
//!
//! Progressive: layers are stored in level-of-detail order (every prefix is an even sample of the map), so each
//! frame draws only the next `budget` points into the offscreen image, on top of what earlier frames drew for
//! the same camera. While the camera moves, the image restarts every frame (a thinned map, at interactive
//! rates); when it rests, the image fills up over a few frames to every point, and once full, a frame costs
//! one blit. This keeps 10 million points usable even on a software rasteriser. Buffers are uploaded once per
//! layer version and kept in egui-wgpu's callback resources.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use eframe::egui;
use eframe::egui_wgpu::{self, CallbackResources, CallbackTrait, RenderState, ScreenDescriptor};
use eframe::wgpu::{self, util::DeviceExt};

use super::points::{GpuPoint, PointLayer};

/// The offscreen image's depth format.
pub const DEPTH_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Depth32Float;

const SHADER: &str = r#"
struct U { view_proj: mat4x4<f32>, eye: vec4<f32>, params: vec4<f32> };
@group(0) @binding(0) var<uniform> u: U;
struct VIn { @location(0) pos: vec3<f32>, @location(1) color: vec4<f32>, @location(2) normal: vec4<f32> };
struct VOut { @builtin(position) clip: vec4<f32>, @location(0) color: vec4<f32>, @location(1) corner: vec2<f32> };

// One triangle per point, covering the point's square (the corners outside it are discarded): half the
// triangles of a two-triangle quad, which is what a software rasteriser pays for.
@vertex fn vs_main(@builtin(vertex_index) vi: u32, p: VIn) -> VOut {
    var corners = array<vec2<f32>, 3>(vec2(-1.0, -1.0), vec2(3.0, -1.0), vec2(-1.0, 3.0));
    var c = u.view_proj * vec4<f32>(p.pos, 1.0);
    let off = corners[vi] * u.params.z / u.params.xy;
    c = vec4<f32>(c.xy + off * c.w, c.z, c.w);
    var shade = 1.0;
    if (u.params.w > 0.5 && dot(p.normal.xyz, p.normal.xyz) > 0.1) {
        let v = normalize(u.eye.xyz - p.pos);
        shade = 0.3 + 0.7 * abs(dot(normalize(p.normal.xyz), v));
    }
    var out: VOut;
    out.clip = c;
    // Points above the cut height (eye.w) go outside the view volume: a roof lifted off to see inside.
    if (p.pos.z > u.eye.w) {
        out.clip = vec4<f32>(2.0, 2.0, 2.0, 1.0);
    }
    out.color = vec4<f32>(p.color.rgb * shade, 1.0);
    out.corner = corners[vi];
    return out;
}

@fragment fn fs_main(v: VOut) -> @location(0) vec4<f32> {
    if (v.corner.x > 1.0 || v.corner.y > 1.0) {
        discard;
    }
    return v.color;
}
"#;

/// Shows the offscreen image in the viewport rect (egui sets the viewport to it): one triangle covering it.
const BLIT: &str = r#"
@group(0) @binding(0) var image: texture_2d<f32>;
@group(0) @binding(1) var nearest: sampler;
struct VOut { @builtin(position) clip: vec4<f32>, @location(0) uv: vec2<f32> };
@vertex fn vs_main(@builtin(vertex_index) vi: u32) -> VOut {
    let xy = vec2<f32>(f32((vi << 1u) & 2u), f32(vi & 2u)) * 2.0 - 1.0;
    var out: VOut;
    out.clip = vec4<f32>(xy, 0.0, 1.0);
    out.uv = vec2<f32>(xy.x * 0.5 + 0.5, 0.5 - xy.y * 0.5);
    return out;
}
@fragment fn fs_main(v: VOut) -> @location(0) vec4<f32> {
    return textureSample(image, nearest, v.uv);
}
"#;

#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Uniforms {
    view_proj: [[f32; 4]; 4],
    eye: [f32; 4],
    /// viewport width and height in pixels, point size in pixels, shading on (1) or off (0).
    params: [f32; 4],
}

struct GpuLayer {
    version: u64,
    points: wgpu::Buffer,
    uniforms: wgpu::Buffer,
    bind: wgpu::BindGroup,
}

/// The offscreen image and how far it got for the camera it was started with.
struct Target {
    size: [u32; 2],
    color: wgpu::TextureView,
    depth: wgpu::TextureView,
    blit: wgpu::BindGroup,
    key: u64,
    /// Points drawn so far, per layer slot.
    drawn: HashMap<usize, usize>,
}

struct Resources {
    points: wgpu::RenderPipeline,
    blit: wgpu::RenderPipeline,
    uniform_layout: wgpu::BindGroupLayout,
    blit_layout: wgpu::BindGroupLayout,
    sampler: wgpu::Sampler,
    format: wgpu::TextureFormat,
    layers: HashMap<usize, GpuLayer>,
    target: Option<Target>,
}

/// How far the offscreen image is, shared with the window (which asks for another frame until it is complete).
#[derive(Default)]
pub struct Fill {
    pub complete: AtomicBool,
    pub drawn: AtomicUsize,
}

/// Whether the adapter is a software rasteriser (lavapipe, llvmpipe, WARP): the viewport starts with a small
/// per-frame budget there.
pub fn is_software(rs: &RenderState) -> bool {
    rs.adapter.get_info().device_type == wgpu::DeviceType::Cpu
}

/// Creates the pipelines once, at app start, when the window has a wgpu renderer.
pub fn init(rs: &RenderState) {
    let device = &rs.device;
    let uniform_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("aerie_points_uniforms"),
        entries: &[wgpu::BindGroupLayoutEntry {
            binding: 0,
            visibility: wgpu::ShaderStages::VERTEX,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Uniform,
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        }],
    });
    let blit_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("aerie_blit"),
        entries: &[
            wgpu::BindGroupLayoutEntry {
                binding: 0,
                visibility: wgpu::ShaderStages::FRAGMENT,
                ty: wgpu::BindingType::Texture {
                    sample_type: wgpu::TextureSampleType::Float { filterable: true },
                    view_dimension: wgpu::TextureViewDimension::D2,
                    multisampled: false,
                },
                count: None,
            },
            wgpu::BindGroupLayoutEntry {
                binding: 1,
                visibility: wgpu::ShaderStages::FRAGMENT,
                ty: wgpu::BindingType::Sampler(wgpu::SamplerBindingType::Filtering),
                count: None,
            },
        ],
    });
    let points = points_pipeline(device, &uniform_layout, rs.target_format);
    let blit = blit_pipeline(device, &blit_layout, rs.target_format);
    let sampler = device.create_sampler(&wgpu::SamplerDescriptor::default());
    rs.renderer.write().callback_resources.insert(Resources {
        points,
        blit,
        uniform_layout,
        blit_layout,
        sampler,
        format: rs.target_format,
        layers: HashMap::new(),
        target: None,
    });
}

fn points_pipeline(
    device: &wgpu::Device,
    layout: &wgpu::BindGroupLayout,
    format: wgpu::TextureFormat,
) -> wgpu::RenderPipeline {
    let instances = wgpu::VertexBufferLayout {
        array_stride: std::mem::size_of::<GpuPoint>() as u64,
        step_mode: wgpu::VertexStepMode::Instance,
        attributes: &wgpu::vertex_attr_array![0 => Float32x3, 1 => Unorm8x4, 2 => Snorm8x4],
    };
    let depth = wgpu::DepthStencilState {
        format: DEPTH_FORMAT,
        depth_write_enabled: Some(true),
        depth_compare: Some(wgpu::CompareFunction::Less),
        stencil: wgpu::StencilState::default(),
        bias: wgpu::DepthBiasState::default(),
    };
    pipeline(
        device,
        "aerie_points",
        SHADER,
        layout,
        &[Some(instances)],
        Some(depth),
        format,
    )
}

fn blit_pipeline(
    device: &wgpu::Device,
    layout: &wgpu::BindGroupLayout,
    format: wgpu::TextureFormat,
) -> wgpu::RenderPipeline {
    pipeline(device, "aerie_blit", BLIT, layout, &[], None, format)
}

/// A pipeline of one WGSL module (`vs_main`, `fs_main`) drawing opaque triangles into `format`.
fn pipeline(
    device: &wgpu::Device,
    label: &str,
    wgsl: &str,
    layout: &wgpu::BindGroupLayout,
    buffers: &[Option<wgpu::VertexBufferLayout>],
    depth_stencil: Option<wgpu::DepthStencilState>,
    format: wgpu::TextureFormat,
) -> wgpu::RenderPipeline {
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some(label),
        source: wgpu::ShaderSource::Wgsl(wgsl.into()),
    });
    let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some(label),
        bind_group_layouts: &[Some(layout)],
        immediate_size: 0,
    });
    device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
        label: Some(label),
        layout: Some(&pipeline_layout),
        vertex: wgpu::VertexState {
            module: &module,
            entry_point: Some("vs_main"),
            buffers,
            compilation_options: wgpu::PipelineCompilationOptions::default(),
        },
        primitive: wgpu::PrimitiveState::default(),
        depth_stencil,
        multisample: wgpu::MultisampleState::default(),
        fragment: Some(wgpu::FragmentState {
            module: &module,
            entry_point: Some("fs_main"),
            targets: &[Some(wgpu::ColorTargetState {
                format,
                blend: None,
                write_mask: wgpu::ColorWrites::ALL,
            })],
            compilation_options: wgpu::PipelineCompilationOptions::default(),
        }),
        multiview_mask: None,
        cache: None,
    })
}

/// One frame's draw: the camera, the layers (slot, contents), how many more points this frame may draw.
pub struct DrawPoints {
    /// Changes whenever what the image shows changes (camera, size, layers): the image then restarts.
    pub key: u64,
    pub view_proj: [[f32; 4]; 4],
    pub eye: [f32; 3],
    /// Points higher than this (view z) are not drawn.
    pub cut_above: f32,
    pub size_px: [u32; 2],
    pub background: [f64; 3],
    pub layers: Vec<(usize, PointLayer)>,
    pub budget: usize,
    pub fill: Arc<Fill>,
}

impl DrawPoints {
    /// Uploads the layers that changed since they were last uploaded, and makes the offscreen image the
    /// view's size.
    fn refresh(&self, device: &wgpu::Device, res: &mut Resources) {
        for (slot, layer) in &self.layers {
            let stale = res
                .layers
                .get(slot)
                .is_none_or(|g| g.version != layer.version);
            if stale {
                res.layers
                    .insert(*slot, upload(device, &res.uniform_layout, layer));
            }
        }
        let size = [self.size_px[0].max(1), self.size_px[1].max(1)];
        if res.target.as_ref().is_none_or(|t| t.size != size) {
            res.target = Some(target(device, res, size));
        }
    }

    /// The next `budget` points of each layer's level-of-detail order, layer after layer, as (slot, from, to);
    /// records them as drawn, tells `fill` how far the image got, and writes each layer's uniforms.
    fn next_ranges(
        &self,
        target: &mut Target,
        layers: &HashMap<usize, GpuLayer>,
        queue: &wgpu::Queue,
    ) -> Vec<(usize, usize, usize)> {
        let mut left = self.budget;
        let mut ranges = Vec::new();
        for (slot, layer) in &self.layers {
            let from = target.drawn.get(slot).copied().unwrap_or(0);
            let to = layer.len().min(from + left);
            left -= to - from;
            target.drawn.insert(*slot, to);
            if to > from {
                ranges.push((*slot, from, to));
            }
            if let Some(g) = layers.get(slot) {
                queue.write_buffer(&g.uniforms, 0, bytemuck::bytes_of(&self.uniforms(layer)));
            }
        }
        let total: usize = self.layers.iter().map(|(_, l)| l.len()).sum();
        let drawn: usize = target.drawn.values().sum();
        self.fill.drawn.store(drawn, Ordering::Relaxed);
        self.fill.complete.store(drawn >= total, Ordering::Relaxed);
        ranges
    }

    /// The pass that draws into the offscreen image: cleared to the background when the drawing `restart`s,
    /// otherwise adding to what earlier frames drew.
    fn begin_pass<'e>(
        &self,
        encoder: &'e mut wgpu::CommandEncoder,
        target: &Target,
        restart: bool,
    ) -> wgpu::RenderPass<'e> {
        let [r, g, b] = self.background;
        let (color, depth) = if restart {
            (
                wgpu::LoadOp::Clear(wgpu::Color { r, g, b, a: 1.0 }),
                wgpu::LoadOp::Clear(1.0),
            )
        } else {
            (wgpu::LoadOp::Load, wgpu::LoadOp::Load)
        };
        encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("aerie_points"),
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view: &target.color,
                depth_slice: None,
                resolve_target: None,
                ops: wgpu::Operations {
                    load: color,
                    store: wgpu::StoreOp::Store,
                },
            })],
            depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                view: &target.depth,
                depth_ops: Some(wgpu::Operations {
                    load: depth,
                    store: wgpu::StoreOp::Store,
                }),
                stencil_ops: None,
            }),
            ..Default::default()
        })
    }
}

impl CallbackTrait for DrawPoints {
    fn prepare(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        _screen: &ScreenDescriptor,
        encoder: &mut wgpu::CommandEncoder,
        resources: &mut CallbackResources,
    ) -> Vec<wgpu::CommandBuffer> {
        let Some(res) = resources.get_mut::<Resources>() else {
            return Vec::new();
        };
        self.refresh(device, res);
        let Resources {
            points,
            layers,
            target,
            ..
        } = res;
        let Some(target) = target.as_mut() else {
            return Vec::new();
        };
        let restart = target.key != self.key;
        if restart {
            target.key = self.key;
            target.drawn.clear();
        }
        let ranges = self.next_ranges(target, layers, queue);
        if !restart && ranges.is_empty() {
            return Vec::new();
        }
        let mut pass = self.begin_pass(encoder, target, restart);
        pass.set_pipeline(points);
        for (slot, from, to) in ranges {
            if let Some(g) = layers.get(&slot) {
                pass.set_bind_group(0, &g.bind, &[]);
                pass.set_vertex_buffer(0, g.points.slice(..));
                pass.draw(0..3, from as u32..to as u32);
            }
        }
        Vec::new()
    }

    fn paint(
        &self,
        _info: egui::PaintCallbackInfo,
        pass: &mut wgpu::RenderPass<'static>,
        resources: &CallbackResources,
    ) {
        let Some(target) = resources
            .get::<Resources>()
            .and_then(|r| r.target.as_ref().map(|t| (r, t)))
        else {
            return;
        };
        let (res, target) = target;
        pass.set_pipeline(&res.blit);
        pass.set_bind_group(0, &target.blit, &[]);
        pass.draw(0..3, 0..1);
    }
}

impl DrawPoints {
    fn uniforms(&self, layer: &PointLayer) -> Uniforms {
        Uniforms {
            view_proj: self.view_proj,
            eye: [self.eye[0], self.eye[1], self.eye[2], self.cut_above],
            params: [
                self.size_px[0] as f32,
                self.size_px[1] as f32,
                layer.point_size_px,
                if layer.shaded { 1.0 } else { 0.0 },
            ],
        }
    }
}

fn target(device: &wgpu::Device, res: &Resources, size: [u32; 2]) -> Target {
    let texture = |label, format, usage| {
        device.create_texture(&wgpu::TextureDescriptor {
            label: Some(label),
            size: wgpu::Extent3d {
                width: size[0],
                height: size[1],
                depth_or_array_layers: 1,
            },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format,
            usage,
            view_formats: &[],
        })
    };
    let color = texture(
        "aerie_view_color",
        res.format,
        wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::TEXTURE_BINDING,
    )
    .create_view(&wgpu::TextureViewDescriptor::default());
    let depth = texture(
        "aerie_view_depth",
        DEPTH_FORMAT,
        wgpu::TextureUsages::RENDER_ATTACHMENT,
    )
    .create_view(&wgpu::TextureViewDescriptor::default());
    let blit = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("aerie_blit"),
        layout: &res.blit_layout,
        entries: &[
            wgpu::BindGroupEntry {
                binding: 0,
                resource: wgpu::BindingResource::TextureView(&color),
            },
            wgpu::BindGroupEntry {
                binding: 1,
                resource: wgpu::BindingResource::Sampler(&res.sampler),
            },
        ],
    });
    Target {
        size,
        color,
        depth,
        blit,
        key: u64::MAX,
        drawn: HashMap::new(),
    }
}

fn upload(device: &wgpu::Device, layout: &wgpu::BindGroupLayout, layer: &PointLayer) -> GpuLayer {
    // An empty buffer cannot be bound; one zero point stands in (it is never drawn: the layer is empty).
    let zero = [GpuPoint::default()];
    let data: &[GpuPoint] = if layer.points.is_empty() {
        &zero
    } else {
        &layer.points
    };
    let points = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("aerie_points"),
        contents: bytemuck::cast_slice(data),
        usage: wgpu::BufferUsages::VERTEX,
    });
    let uniforms = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("aerie_points_uniforms"),
        size: std::mem::size_of::<Uniforms>() as u64,
        usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("aerie_points_uniforms"),
        layout,
        entries: &[wgpu::BindGroupEntry {
            binding: 0,
            resource: uniforms.as_entire_binding(),
        }],
    });
    GpuLayer {
        version: layer.version,
        points,
        uniforms,
        bind,
    }
}

/// The paint callback for `rect`.
pub fn callback(rect: egui::Rect, draw: DrawPoints) -> egui::Shape {
    egui::Shape::Callback(egui_wgpu::Callback::new_paint_callback(rect, draw))
}
