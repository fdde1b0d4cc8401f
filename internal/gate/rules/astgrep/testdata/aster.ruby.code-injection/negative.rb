class ReportsController < ApplicationController
  ACTIONS = %w[daily weekly].freeze

  def run
    action = ACTIONS.include?(params[:name]) ? params[:name] : "daily"
    Report.new.public_send(:daily)
  end
end
